"""Helpers of the env.toml tests: write a file, find a line, a two-profile example."""

from __future__ import annotations

import textwrap
from pathlib import Path


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip("\n"))
    return path


def line_no(path: Path, needle: str, nth: int = 1) -> int:
    """1-based line of the nth line of ``path`` containing ``needle``."""
    seen = 0
    for i, line in enumerate(path.read_text().splitlines(), 1):
        if needle in line:
            seen += 1
            if seen == nth:
                return i
    raise AssertionError(f"{needle!r} not in {path}")


SIMPLE = """
[base]
executor = "slurm"
account = "acct"
partition = "batch"
time = "04:00:00"
mounts = ["/lustre:/lustre", "/data:/data:ro"]
env_vars = { NCCL_DEBUG = "INFO", HF_HOME = "/cache/hf" }

[dev]
extends = "base"
run_partition = "interactive"
nodes = 2
"""


