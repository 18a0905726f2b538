"""A search pipeline described in one YAML file: search a hub space, then train the best archs.

``nasx run pipeline.yaml`` (or :func:`run_pipeline`) runs the steps named in ``pipeline:`` in
order, like Vega's ``pipeline: [nas, fullytrain]``:

- ``search``: a multi-trial search of a hub space (``space.name`` from
  :func:`nasx.hub.list_spaces`, with ``space.args``) by a strategy of :mod:`nasx.strategy`, each
  trial trained by a classification evaluator on ``data``, scored with its cost
  (:class:`~nasx.evaluator.cost.CostEvaluator`: params, MACs, FLOPs, latency) and ranked by
  ``objective`` (accuracy, or the MnasNet reward under a latency or MACs target); archs outside
  ``limits`` (FLOPs, params, latency ranges) are rejected before training.
- ``fullytrain``: :func:`~nasx.experiment.results.second_stage.stage2`, the ``top_k`` archs of the search
  (or of the experiment in ``from``) trained ``seeds`` times with the full training settings;
  ``warm_start: true`` starts them from the search trials' weights (``search.keep_weights``).

The file is read with YAML's safe loader (no tags construct objects; aliases expand to at most
:data:`MAX_YAML_NODES` values; a key written twice is refused); every key is checked, and an
unknown key or a bad value is refused with its path and what is allowed. ``nasx run --check``
also builds the space and the strategy from their ``args`` (:func:`check_arguments`). Relative
paths are relative to the current directory. ``tutorials/pipelines/`` has examples (they are tested).

    >>> cfg = validate({'pipeline': ['search'], 'search': {'workdir': 'w',
    ...     'space': {'name': 'mnasnet'}, 'strategy': {'name': 'Random'},
    ...     'data': {'name': 'random'}, 'evaluator': {'max_epochs': 1}}})
    >>> cfg['search']['objective']['type'], cfg['search']['limits']['max_trials']
    ('accuracy', 10)
    >>> validate({'pipeline': ['search'], 'search': {'workdir': 'w', 'spaec': {}}})
    Traceback (most recent call last):
    ...
    nasx.pipeline.PipelineError: search.spaec: unknown key; allowed: data, evaluator, ...
"""

from .build import build_evaluator, check_arguments, no_success_message, run_pipeline
from .schema import PipelineError, validate
from .yaml_file import MAX_YAML_NODES, load

__all__ = [
    "MAX_YAML_NODES",
    "PipelineError",
    "build_evaluator",
    "check_arguments",
    "load",
    "no_success_message",
    "run_pipeline",
    "validate",
]
