"""Runtime layer: recipe scripts (with ``[tool.runspec]`` blocks) and their configs."""

from pathlib import Path

#: Absolute directory of the recipe scripts (never derived from the cwd).
RECIPES_DIR = Path(__file__).resolve().parent
