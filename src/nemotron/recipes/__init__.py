"""Runtime layer: recipe scripts (with ``[tool.runspec]`` blocks) and their configs."""
