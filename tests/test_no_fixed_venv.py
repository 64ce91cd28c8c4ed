"""`pip install -e '.[test]'` into any venv, then `pytest`: no test may run the CLI or Python
from the repository's own `.venv` (it is not there, or it is another install than the one under
test). Tests find the command with tests/nemotron_cli.py or next to ``sys.executable``.

Only the tests of the set-up scripts themselves (tests/scripts) name a `.venv`: the one
scripts/bootstrap.sh makes in the clone they test."""

from __future__ import annotations

import re
from pathlib import Path

TESTS = Path(__file__).resolve().parent
#: a path into a `.venv` built in code: ".venv" / "bin", ".venv/bin/...", ROOT / ".venv"
FIXED_VENV = re.compile(r"""["']\.venv["']\s*/|\.venv/bin|/\s*["']\.venv["']""")


def test_no_test_runs_the_repository_venv():
    found = [f"{path.relative_to(TESTS.parent)}:{n}: {line.strip()}"
             for path in sorted(TESTS.rglob("*.py")) if path.parent != TESTS / "scripts" and path != Path(__file__)
             for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1) if FIXED_VENV.search(line)]
    assert not found, "\n".join(found)


def test_the_pattern_sees_the_forms_it_must_refuse():
    for line in ('NEMOTRON = ROOT / ".venv" / "bin" / "nemotron"', "PY = f'{ROOT}/.venv/bin/python'",
                 "subprocess.run(['.venv/bin/nemotron', '--help'])"):
        assert FIXED_VENV.search(line), line
    for line in ('NEMOTRON = Path(sys.executable).with_name("nemotron")', 'for sub in (".git", ".venv", "build"):'):
        assert not FIXED_VENV.search(line), line
