"""Kit recipes: utilities that run on the cluster (preflight checks)."""
