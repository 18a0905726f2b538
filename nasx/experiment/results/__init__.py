"""Internal: what a run leaves for its user (import the public names from :mod:`nasx.experiment`).

:mod:`.summary` (the end-of-run lines), :mod:`.partial` (trials below the full budget),
:mod:`.table` (``TrialTable``), :mod:`.pareto` (several objectives), :mod:`.loading` (models
loaded back), :mod:`.second_stage` (``stage2``: the best archs trained fully).
"""
