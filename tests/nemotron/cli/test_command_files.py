"""Every recipe command file stays a page a user can fork: at most 45 non-blank lines, and
exactly one ``# FORK POINT`` line, the line to replace to launch elsewhere (issue 31;
docs/dev/architecture.md, "The command files").

The command files: those of every recipe family (a folder of ``nemotron/cli/commands/`` with a
``_typer_group.py``: ``nano3``), ``FAMILY/*.py`` (pretrain, sft, convert, rl, eval, pipe; not
``__init__.py`` or ``_``-modules) and ``FAMILY/data/prep.py``; and ``kit/preflight.py``.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

CLI = Path(__file__).resolve().parents[3] / "src" / "nemotron" / "cli"
MAX_LINES = 45
MARKER = re.compile(r"^\s*# FORK POINT\b", re.M)


def command_files(cli: Path = CLI) -> list[Path]:
    files = [cli / "kit" / "preflight.py"]
    for family in sorted(p.parent for p in (cli / "commands").glob("*/_typer_group.py")):
        files += [p for p in family.glob("*.py") if not p.name.startswith("_")]
        files += [p for p in [family / "data" / "prep.py"] if p.is_file()]
    return sorted(files)


def non_blank_lines(text: str) -> int:
    return sum(1 for line in text.splitlines() if line.strip())


def fork_points(text: str) -> int:
    """``# FORK POINT`` comment lines; the words anywhere else (a docstring) count as a second one."""
    return max(len(MARKER.findall(text)), text.count("FORK POINT"))


def test_the_command_files_are_found() -> None:
    names = {str(p.relative_to(CLI)) for p in command_files()}
    assert {"commands/nano3/pretrain.py", "commands/nano3/sft.py", "commands/nano3/convert.py",
            "commands/nano3/rl.py", "commands/nano3/eval.py", "commands/nano3/pipe.py",
            "commands/nano3/data/prep.py", "kit/preflight.py"} <= names
    assert all(p.is_file() for p in command_files())


@pytest.mark.parametrize("path", command_files(), ids=lambda p: str(p.relative_to(CLI)))
def test_a_command_file_is_short_with_one_fork_point(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    assert non_blank_lines(text) <= MAX_LINES, (
        f"{path.relative_to(CLI)}: {non_blank_lines(text)} non-blank lines (at most {MAX_LINES}): move what is "
        "not the command's flow (tables, hooks, checks) into a module of its own")
    assert fork_points(text) == 1, f"{path.relative_to(CLI)}: {fork_points(text)} FORK POINT lines (exactly 1)"


def test_the_counters_count(tmp_path: Path) -> None:
    text = '"""doc\n\nmore"""\n\n\nx = 1\n    # FORK POINT: here\n  \ny = 2\n'
    assert non_blank_lines(text) == 5
    assert fork_points(text) == 1
    assert fork_points(text + "# FORK POINT: again\n") == 2
    assert fork_points('"""Everything past the FORK POINT."""\n' + text) == 2
    assert fork_points("x = 1\n") == 0
    for d in ("commands/nano3/data", "commands/super3", "commands/other", "kit"):
        (tmp_path / d).mkdir(parents=True)
    for name in ("commands/nano3/_typer_group.py", "commands/nano3/a.py", "commands/nano3/_b.py",
                 "commands/nano3/__init__.py", "commands/nano3/data/prep.py", "commands/super3/_typer_group.py",
                 "commands/super3/pipe.py", "commands/other/x.py", "commands/jobs.py", "kit/preflight.py"):
        (tmp_path / name).write_text("")
    assert [str(p.relative_to(tmp_path)) for p in command_files(tmp_path)] == [
        "commands/nano3/a.py", "commands/nano3/data/prep.py", "commands/super3/pipe.py", "kit/preflight.py"]
