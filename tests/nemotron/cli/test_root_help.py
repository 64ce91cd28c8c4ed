"""`nemotron --help` lists the command groups without importing them; a group
that fails to import is reported when it is used; lazily added groups and
commands (`RecipeTyper.add_lazy_typer`/`add_lazy_command`) load on lookup."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import typer

from nemo_runspec.cli.help import short_help
from nemotron.cli.bin.nemotron import GROUPS
from tests.nemotron_cli import NEMOTRON

PY = sys.executable


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("NEMOTRON_")}
    env["COLUMNS"] = "200"
    return env


@pytest.mark.parametrize("name", sorted(GROUPS))
def test_listed_help_is_the_group_s_own(name):
    """The one-line help `nemotron --help` shows without importing a group is the
    one its own definition gives (what the listing showed when it imported them)."""
    module, attr, optional, listed = GROUPS[name]
    assert not optional
    target = getattr(importlib.import_module(module), attr)
    command = typer.main.get_command(target) if isinstance(target, typer.Typer) else target
    assert short_help(command) == listed
    assert getattr(command, "rich_help_panel", None) is None and not getattr(command, "hidden", False)


def _after(argv: list[str], setup: str = "", cwd: Path | None = None) -> tuple[subprocess.CompletedProcess, set[str]]:
    """Run the CLI in a fresh interpreter; its output and the modules it imported."""
    script = "import json, os, sys\n" + setup + textwrap.dedent(f"""
        from nemotron.cli.bin import nemotron
        try:
            nemotron.main({argv!r})
        except SystemExit as exc:
            code = exc.code
        else:
            code = 0
        os.write(int(os.environ["MODULES_FD"]), json.dumps(sorted(sys.modules)).encode())
        sys.exit(code)
    """)
    read, write = os.pipe()
    proc = subprocess.run([PY, "-c", script], capture_output=True, text=True, timeout=120, cwd=cwd,
                          env={**_env(), "MODULES_FD": str(write)}, pass_fds=(write,))
    os.close(write)
    chunks = []
    while chunk := os.read(read, 1 << 16):
        chunks.append(chunk)
    os.close(read)
    assert chunks, proc.stderr
    return proc, set(json.loads(b"".join(chunks)))


def test_root_help_imports_no_group_and_not_rich(tmp_path):
    proc, modules = _after(["--help"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    for name, entry in GROUPS.items():
        assert f"│ {name} " in proc.stdout
        assert entry[0] not in modules
    assert "Inspect and validate the [tool.runspec] metadata" in proc.stdout  # Typer's \[ escape read
    assert not any(m.startswith("nemotron.cli.commands.") for m in modules)
    assert "rich.console" not in modules  # laid out by nemo_runspec.cli.panels


def test_recipe_help_imports_only_its_command(tmp_path):
    proc, modules = _after(["nano3", "pretrain", "--help"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "Usage: nemotron nano3 pretrain" in proc.stdout
    assert "nemotron.cli.commands.nano3.pretrain" in modules
    for lazy in ("nemotron.cli.commands.nano3.sft", "nemotron.cli.commands.nano3.data.import_",
                 "nemotron.cli.commands.nano3.model.import_", "nemotron.cli.commands.nano3.pipe",
                 "nemotron.cli.discovered", "rich.console"):
        assert lazy not in modules, lazy


BROKEN = "raise RuntimeError('boom: broken on purpose')\n"
BROKEN_RUNSPEC = """\
from nemo_runspec import parse
parse(__file__)
# /// script
# [tool.runspec]
# name = "x"
# nodez = 3
# ///
"""


def _register(tmp_path: Path, body: str) -> str:
    (tmp_path / "broken_group.py").write_text(body)
    return (f"sys.path.insert(0, {str(tmp_path)!r})\n"
            "from nemotron.cli.bin import nemotron as _n\n"
            "_n.GROUPS['broken'] = ('broken_group', 'app', False, 'A group whose module does not import.')")


def test_broken_group_is_listed_and_reported_when_used(tmp_path):
    setup = _register(tmp_path, BROKEN)
    proc, modules = _after(["--help"], setup, tmp_path)
    assert proc.returncode == 0, proc.stderr
    row = next(line for line in proc.stdout.splitlines() if "│ broken " in line)
    assert "A group whose module does not import." in row
    assert "broken_group" not in modules and "warning" not in proc.stderr

    for argv in (["broken", "--help"], ["broken"], ["broken", "anything", "x=1"], ["--dry-run", "broken", "-h"]):
        proc, _ = _after(argv, setup, tmp_path)
        lines = [line for line in proc.stderr.splitlines() if line.strip()]
        assert proc.returncode == 1, (argv, proc.stderr)
        assert lines == ["error: command group 'broken' failed to load: RuntimeError: boom: broken on purpose"]
        assert proc.stdout == ""


def test_broken_runspec_in_a_group_module_is_its_own_error(tmp_path):
    setup = _register(tmp_path, BROKEN_RUNSPEC)
    proc, _ = _after(["broken", "--help"], setup, tmp_path)
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert proc.returncode == 2, proc.stderr
    assert len(lines) == 1 and lines[0].startswith(f"error: {tmp_path / 'broken_group.py'}:6: ")
    assert "Traceback" not in proc.stderr


def test_broken_group_with_debug_shows_the_traceback(tmp_path):
    proc, _ = _after(["--debug", "broken"], _register(tmp_path, BROKEN), tmp_path)
    assert proc.returncode == 1 and "Traceback" in proc.stderr and "boom: broken on purpose" in proc.stderr


# --------------------------------------------------------------------------- lazy groups and commands


# --------------------------------------------------------------------------- the console script's quick exit

QUICK = """\
import atexit, os, sys, threading, time
out = sys.argv.pop(1)

class Finalized:
    def __del__(self):
        os.write(2, b"finalized\\n")

KEEP = Finalized()  # module teardown would call this; a quick exit does not
atexit.register(lambda: open(out + ".atexit", "w").write("ran"))

def later():
    time.sleep(0.3)
    open(out + ".thread", "w").write("done")

threading.Thread(target=later).start()  # not a daemon: waited for either way
from concurrent.futures import ThreadPoolExecutor
POOL = ThreadPoolExecutor(1)
POOL.submit(time.sleep, 0)  # an idle worker left behind: told to stop, not waited on forever
sys.argv[0] = "nemotron"
from nemotron.cli.bin.nemotron import console_main
console_main()
"""


@pytest.mark.parametrize("argv, quick, code", [
    (["--help"], True, 0),
    (["nano3", "pretrain", "-h"], True, 0),
    (["nano3", "pretrain", "-c", "tiny", "--dry-run", "--batch", "nope"], True, 2),
    (["nano4"], False, 2),
    (["--bogus-global=1", "env"], False, 2),
])
def test_console_script_exits_quickly_after_help_and_launches(tmp_path, argv, quick, code):
    out = tmp_path / "marker"
    env = {**_env(), "NEMOTRON_ENV_FILE": str(tmp_path / "env.toml")}
    (tmp_path / "env.toml").write_text('[dev]\nexecutor = "slurm"\naccount = "a"\npartition = "p"\n')
    proc = subprocess.run([PY, "-c", QUICK, str(out), *argv], capture_output=True, text=True, timeout=120,
                          cwd=tmp_path, env=env)
    assert proc.returncode == code, proc.stderr
    assert (tmp_path / "marker.atexit").read_text() == "ran"  # atexit handlers run
    assert (tmp_path / "marker.thread").read_text() == "done"  # non-daemon threads joined
    assert ("finalized" in proc.stderr) is not quick  # module teardown skipped only when quick
    if argv[0] in ("--help", "nano3") and code == 0:
        assert proc.stdout.rstrip().endswith("╯")  # all of the page flushed
    if code == 2 and quick:
        assert "error: " in proc.stderr and "unknown profile 'nope'" in proc.stderr


def test_the_console_script_is_console_main():
    import tomllib

    scripts = tomllib.loads((Path(__file__).resolve().parents[3] / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts["nemotron"] == "nemotron.cli.bin.nemotron:console_main"


def test_console_script_reports_a_closed_stdout_like_python(tmp_path):
    """`nemotron --help | head -1`: stdout closed early; a failure status (as before the
    quick exit: 1), no traceback, and the quick exit's own flush does not raise."""
    read, write = os.pipe()
    os.close(read)
    proc = subprocess.run([str(NEMOTRON), "--help"], stdout=write, stderr=subprocess.PIPE,
                          text=True, timeout=60, env=_env(), cwd=tmp_path)
    os.close(write)
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr
