"""The error contract of docs/cli.md, through the real ``nemotron`` binary: a problem the
user can fix is one ``error: <path>[:<line>]: <problem> (<hint>)`` line on stderr, no
traceback, exit 2 (usage, config, env.toml, runspec, local paths) or 1 (execution).

Each case is one a hostile tester found broken: files that are not UTF-8, a
read-only NEMOTRON_HOME, a directory or a device where a file belongs, a broken
runspec block in a recipe, unreadable paths given to ``runspec validate``.
"""

from __future__ import annotations

import ctypes
import os
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.nemotron_cli import NEMOTRON, job_errors

_PR_CAPBSET_DROP = 24
_CAP_DAC_OVERRIDE, _CAP_DAC_READ_SEARCH = 1, 2


def _without_root_overrides() -> Callable[[], None] | None:
    """A ``preexec_fn`` that makes file permissions apply to the child even as root.

    Root ignores ``chmod`` (CAP_DAC_OVERRIDE); dropping the two DAC capabilities
    from the bounding set before ``exec`` gives the child an ordinary user's view.
    """
    if os.geteuid() != 0:
        return None
    libc = ctypes.CDLL(None, use_errno=True)

    def drop() -> None:
        for cap in (_CAP_DAC_OVERRIDE, _CAP_DAC_READ_SEARCH):
            if libc.prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0) != 0:
                raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP)")

    return drop


def _env(tmp: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("NEMOTRON_")}
    env.update(HOME=str(tmp), NEMOTRON_HOME=str(tmp / "nhome"), COLUMNS="200", NO_COLOR="1")
    return env


def nemotron(tmp: Path, *args: str, env: dict[str, str] | None = None,
             unprivileged: bool = False) -> subprocess.CompletedProcess[str]:
    """``nemotron ARGS`` in ``tmp`` with HOME and NEMOTRON_HOME inside it."""
    return subprocess.run([str(NEMOTRON), *args], cwd=tmp, env={**_env(tmp), **(env or {})},
                          capture_output=True, text=True, timeout=180,
                          preexec_fn=_without_root_overrides() if unprivileged else None)


def one_error(proc: subprocess.CompletedProcess[str], code: int, *named: object) -> str:
    """Assert the contract: exit ``code``, stderr is exactly one ``error:`` line naming
    every item of ``named``, no traceback. Returns the line."""
    output = proc.stdout + proc.stderr
    assert proc.returncode == code, output
    assert "Traceback" not in output
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), proc.stderr
    for item in named:
        assert str(item) in lines[0], lines[0]
    return lines[0]


# --------------------------------------------------------------------------- 1. not UTF-8

def test_config_file_that_is_not_utf8(tmp_path):
    bad = tmp_path / "mine.yaml"
    bad.write_bytes(b"defaults: [default]\ntrain:\n  note: caf\xe9\n")
    line = one_error(nemotron(tmp_path, "nano3", "pretrain", "-c", str(bad), "--dry-run"), 2, f"{bad}:3:")
    assert "not UTF-8" in line


def test_relative_config_path_that_is_not_utf8(tmp_path):
    (tmp_path / "mine.yaml").write_bytes(b"\xff\xfe")
    line = one_error(nemotron(tmp_path, "nano3", "sft", "-c", "mine.yaml", "--dry-run"), 2,
                     f"{tmp_path / 'mine.yaml'}:1:")
    assert "not UTF-8" in line


def test_env_file_that_is_not_utf8(tmp_path):
    env_toml = tmp_path / "env.toml"
    env_toml.write_bytes(b'[dev]\nexecutor = "local"\n# caf\xe9\n')
    for args in (["nano3", "pretrain", "-c", "tiny", "--dry-run"],
                 ["nano3", "pretrain", "-c", "tiny", "--run", "dev", "--dry-run"],
                 ["--env-file", str(env_toml), "env", "list"]):
        line = one_error(nemotron(tmp_path, *args), 2, f"{env_toml}:3:")
        assert "not UTF-8" in line


def test_recipe_script_that_is_not_utf8(tmp_path):
    script = tmp_path / "train.py"
    script.write_bytes(b'# /// script\n# [tool.runspec]\n# name = "x"\n# ///\nprint("\xff")\n')
    line = one_error(nemotron(tmp_path, "runspec", "show", str(script)), 2, f"{script}:5:")
    assert "UTF-8" in line


# --------------------------------------------------------------------------- 2. NEMOTRON_HOME

@pytest.mark.parametrize("command", [
    ["kit", "preflight"],
    ["nano3", "data", "prep", "pretrain", "-c", "tiny"],
])
def test_read_only_nemotron_home(tmp_path, command):
    home = tmp_path / "nhome"
    home.mkdir()
    home.chmod(0o555)
    try:
        proc = nemotron(tmp_path, *command, unprivileged=True)
    finally:
        home.chmod(0o755)
    line = one_error(proc, 2, home / "jobs", "NEMOTRON_HOME", "writable")
    assert "Permission denied" in line
    assert not (home / "jobs").exists()


def test_nemotron_home_below_a_file(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory\n")
    proc = nemotron(tmp_path, "kit", "preflight", env={"NEMOTRON_HOME": str(blocker / "home")})
    line = one_error(proc, 2, blocker / "home", "NEMOTRON_HOME")
    assert "not a directory" in line.lower()


def test_default_nemotron_home_not_writable(tmp_path):
    """NEMOTRON_HOME unset: ~/.nemotron is used, and the error says so."""
    env = _env(tmp_path)
    del env["NEMOTRON_HOME"]
    tmp_path.chmod(0o555)
    try:
        proc = subprocess.run([str(NEMOTRON), "kit", "preflight"], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=180,
                              preexec_fn=_without_root_overrides())
    finally:
        tmp_path.chmod(0o755)
    one_error(proc, 2, tmp_path / ".nemotron", "NEMOTRON_HOME is not set")


# --------------------------------------------------------------------------- 3. -c DIR

@pytest.mark.parametrize("given", ["confs", "./confs", "confs/", "{tmp}/confs"])
def test_directory_given_as_config(tmp_path, given):
    (tmp_path / "confs").mkdir()
    (tmp_path / "confs" / "mine.yaml").write_text("defaults: [default]\n")
    proc = nemotron(tmp_path, "nano3", "pretrain", "-c", given.format(tmp=tmp_path), "--dry-run")
    line = one_error(proc, 2, f"error: {tmp_path / 'confs'}: ", "is a directory")
    assert str(tmp_path / "confs" / "mine.yaml") in line  # what to pass instead


def test_device_given_as_config(tmp_path):
    one_error(nemotron(tmp_path, "nano3", "pretrain", "-c", os.devnull, "--dry-run"), 2,
              f"error: {os.devnull}: ", "not a regular file")


def test_unreadable_config_file(tmp_path):
    conf = tmp_path / "mine.yaml"
    conf.write_text("defaults: [default]\n")
    conf.chmod(0)
    proc = nemotron(tmp_path, "nano3", "pretrain", "-c", str(conf), "--dry-run", unprivileged=True)
    one_error(proc, 2, f"error: {conf}: ", "Permission denied")


# --------------------------------------------------------------------------- 4. --env-file

def test_env_file_that_is_a_device(tmp_path):
    """/dev/null exists; what is wrong is that it is not a regular file."""
    line = one_error(nemotron(tmp_path, "nano3", "pretrain", "-c", "tiny", "--env-file", os.devnull,
                              "--dry-run"), 2, f"error: {os.devnull}: ", "character device")
    assert "does not exist" not in line


def test_empty_env_file_has_no_profiles(tmp_path):
    empty = tmp_path / "empty.toml"
    empty.write_text("")
    ok = nemotron(tmp_path, "nano3", "pretrain", "-c", "tiny", "--env-file", str(empty), "--dry-run")
    assert ok.returncode == 0, ok.stderr
    line = one_error(nemotron(tmp_path, "nano3", "pretrain", "-c", "tiny", "--env-file", str(empty),
                              "--run", "dev", "--dry-run"), 2, empty, "'dev'")
    assert "no profiles" in line


def test_unreadable_env_file(tmp_path):
    env_toml = tmp_path / "env.toml"
    env_toml.write_text('[dev]\nexecutor = "local"\n')
    env_toml.chmod(0)
    proc = nemotron(tmp_path, "nano3", "pretrain", "-c", "tiny", "--env-file", str(env_toml),
                    "--dry-run", unprivileged=True)
    one_error(proc, 2, f"error: {env_toml}: ", "Permission denied")


# --------------------------------------------------------------------------- 5. broken runspec

# Registers a recipe command module the way nano3's command table does.
DRIVER = """\
import sys
sys.path.insert(0, sys.argv[1])
from nemotron.cli.commands.nano3._typer_group import app
app.add_command_module("distill", "distill_cmd", rich_help_panel="Training stages")
from nemotron.cli.bin import nemotron
nemotron.GROUPS["broken"] = ("broken_group", "app", False)
nemotron.main(sys.argv[2:])
"""

BROKEN_RUNSPEC = """\
# /// script
# [tool.runspec]
# name = "nano3/distill"
#
# [tool.runspec.resources]
# nodes = "two"
# ///
print("never run")
"""


COMMAND = '''
def distill(ctx: typer.Context) -> int:
    """Distill a student (runs here)."""
    return execution.run_local(compile_job(SPEC, parse_recipe_config(ctx)))
'''


def _driver(tmp: Path, script: bytes, *args: str) -> subprocess.CompletedProcess[str]:
    recipe = tmp / "recipes" / "distill"
    recipe.mkdir(parents=True, exist_ok=True)
    (recipe / "train.py").write_bytes(script)
    head = textwrap.dedent(f"""\
        import typer
        from nemo_runspec import execution
        from nemo_runspec import parse as parse_runspec
        from nemo_runspec.cmdline.recipe_config import parse_recipe_config
        from nemo_runspec.job.compiled import compile_job
        SPEC = parse_runspec({str(recipe / 'train.py')!r})
    """)
    (tmp / "distill_cmd.py").write_text(head + COMMAND)
    (tmp / "broken_group.py").write_text(head + "app = None\n")
    return subprocess.run([sys.executable, "-c", DRIVER, str(tmp), *args], cwd=tmp, env=_env(tmp),
                          capture_output=True, text=True, timeout=180)


def test_broken_runspec_in_a_recipe_is_exit_2(tmp_path):
    script = tmp_path / "recipes" / "distill" / "train.py"
    proc = _driver(tmp_path, BROKEN_RUNSPEC.encode(), "nano3", "distill", "-c", "tiny", "--dry-run")
    line = one_error(proc, 2, f"error: {script}:6: ", "resources.nodes")
    assert "failed to load" not in line


def test_recipe_script_not_utf8_is_exit_2(tmp_path):
    script = tmp_path / "recipes" / "distill" / "train.py"
    proc = _driver(tmp_path, BROKEN_RUNSPEC.replace('"two"', "2").encode() + b"# caf\xe9\n",
                   "nano3", "distill")
    one_error(proc, 2, f"error: {script}:9: ", "UTF-8")


def test_broken_runspec_in_a_command_group_is_exit_2(tmp_path):
    script = tmp_path / "recipes" / "distill" / "train.py"
    proc = _driver(tmp_path, BROKEN_RUNSPEC.encode(), "broken", "anything")
    one_error(proc, 2, f"error: {script}:6: ")


def test_broken_runspec_is_still_listed_in_help(tmp_path):
    proc = _driver(tmp_path, BROKEN_RUNSPEC.encode(), "nano3", "--help")
    assert proc.returncode == 0, proc.stderr
    assert "distill" in proc.stdout and "failed to load" in proc.stdout


# --------------------------------------------------------------------------- 6. runspec validate

def test_validate_unreadable_directory(tmp_path):
    locked = tmp_path / "recipes"
    locked.mkdir()
    locked.chmod(0)
    try:
        proc = nemotron(tmp_path, "runspec", "validate", str(locked), unprivileged=True)
    finally:
        locked.chmod(0o755)
    one_error(proc, 2, f"error: {locked}: ", "cannot read directory", "Permission denied")
    assert "files checked" not in proc.stdout


def test_validate_unreadable_subdirectory_and_file(tmp_path):
    root = tmp_path / "recipes"
    (root / "a").mkdir(parents=True)
    (root / "b").mkdir()
    good = root / "a" / "train.py"
    good.write_text('# /// script\n# [tool.runspec]\n# name = "a"\n# ///\n')
    hidden = root / "b" / "train.py"
    hidden.write_text(good.read_text())
    hidden.chmod(0)
    proc = nemotron(tmp_path, "runspec", "validate", str(root), unprivileged=True)
    one_error(proc, 2, f"error: {hidden}: ", "cannot read file")
    (root / "b").chmod(0)
    try:
        proc = nemotron(tmp_path, "runspec", "validate", str(root), unprivileged=True)
    finally:
        (root / "b").chmod(0o755)
    one_error(proc, 2, f"error: {root / 'b'}: ", "cannot read directory")


def test_validate_nonexistent_paths(tmp_path):
    proc = nemotron(tmp_path, "runspec", "validate", "ghost", "ghost2")
    one_error(proc, 2, "error: ghost: ", "no such file or directory", "ghost2")


# --------------------------------------------------------------------------- 7. Ctrl-C

SLEEPER = """\
# /// script
# [tool.runspec]
# name = "nano3/distill"
#
# [tool.runspec.run]
# launch = "direct"
# ///
import sys, time
print("started", flush=True)
try:
    time.sleep(120)
except KeyboardInterrupt:
    sys.exit(1)  # the script's own code: the command still says 130 (interrupted)
"""


def test_ctrl_c_during_a_local_run_exits_130(tmp_path):
    """SIGINT to the ``nemotron`` process alone (no terminal, no process group)."""
    import signal

    helped = _driver(tmp_path, SLEEPER.encode(), "--help")  # writes the recipe and its command module
    assert helped.returncode == 0, helped.stderr
    config = tmp_path / "recipes" / "distill" / "config"
    config.mkdir()
    (config / "default.yaml").write_text("steps: 1\n")
    proc = subprocess.Popen([sys.executable, "-c", DRIVER, str(tmp_path), "nano3", "distill"],
                            cwd=tmp_path, env=_env(tmp_path), text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None
    seen = proc.stdout.readline()
    assert seen.strip() == "started", seen + proc.communicate(timeout=60)[1]
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "Traceback" not in err


# --------------------------------------------------------------------------- the safety net

def test_an_oserror_no_layer_expected_still_names_its_file(tmp_path):
    """The last resort for a file error none of our layers turned into one of ours:
    one line, the file first (as ours are), exit 1, no traceback."""
    target = tmp_path / "some" / "file.bin"
    (tmp_path / "oops_group.py").write_text(textwrap.dedent(f"""\
        import typer
        app = typer.Typer()
        @app.command()
        def go():
            raise PermissionError(13, "Permission denied", {str(target)!r})
    """))
    driver = textwrap.dedent(f"""\
        import sys
        sys.path.insert(0, {str(tmp_path)!r})
        from nemotron.cli.bin import nemotron
        nemotron.GROUPS["oops"] = ("oops_group", "app", False)
        nemotron.main(["oops"])
    """)
    proc = subprocess.run([sys.executable, "-c", driver], cwd=tmp_path, env=_env(tmp_path),
                          capture_output=True, text=True, timeout=120)
    line = one_error(proc, 1, f"error: {target}: Permission denied (")
    assert "--debug" in line


def test_read_only_data_dir_during_local_data_prep(tmp_path):
    """NEMOTRON_HOME is writable but its data/ is not: the data prep script itself
    reports the directory in one line (exit 2), no traceback."""
    home = tmp_path / "nhome"
    (home / "data").mkdir(parents=True)
    (home / "data").chmod(0o555)
    try:
        proc = nemotron(tmp_path, "nano3", "data", "prep", "pretrain", "-c", "tiny", unprivileged=True)
    finally:
        (home / "data").chmod(0o755)
    output = proc.stdout + proc.stderr
    assert proc.returncode == 2, output[-2000:]
    assert "Traceback" not in output
    errors = job_errors(proc.stderr)
    assert len(errors) == 1 and str(home / "data") in errors[0] and "Permission denied" in errors[0], output[-2000:]
