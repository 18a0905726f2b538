"""nasx.evaluator (work in progress)."""
