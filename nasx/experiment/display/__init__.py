"""Internal: what a person sees while a run goes (terminal, Jupyter, TensorBoard, web UI).

:mod:`.choose` picks the display; :mod:`.progress` (terminal), :mod:`.notebook` and
:mod:`.one_shot` (Jupyter), :mod:`.html` (notebook tables), :mod:`.tensorboard`, :mod:`.webui`.
"""

from nasx._lazy import lazy_attributes

# what ``nasx.experiment.display`` held when it was one module (now :mod:`.choose`), still there
_OLD_NAMES = {
    "budget_count": "nasx.experiment.display.choose",
    "progress_for": "nasx.experiment.display.choose",
}
__getattr__, __dir__ = lazy_attributes(__name__, _OLD_NAMES, globals())
