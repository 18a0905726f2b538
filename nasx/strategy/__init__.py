"""nasx.strategy (work in progress)."""
