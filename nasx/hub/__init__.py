"""nasx.hub (work in progress)."""
