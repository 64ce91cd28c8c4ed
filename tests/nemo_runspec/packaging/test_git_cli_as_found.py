"""Issue 30, class 7: git as it is found on the machine.

A real repository owned by another uid (git's "dubious ownership" refusal) and
a PATH without git: every packager either says so in one line with the cause
and the fix, or (a profile that names ``none`` or ``self_contained``) ships what
it was asked to ship and says it could not record the commit. Nothing silently
becomes "not a repository".
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from nemo_runspec import parse
from nemo_runspec.errors import PackagingError
from nemo_runspec.packaging.git_cli import find_repo_root
from nemo_runspec.packaging.select import build_packager
from tests.nemo_runspec.packaging.git_repos import git, make_repo

OTHER_UID = 12345
NEMOTRON = Path(sys.executable).with_name("nemotron")
HEADER = '# /// script\n# [tool.runspec]\n# name = "t/{name}"\n#\n# [tool.runspec.run]\n# launch = "direct"\n# ///\n'
KINDS = ("git", "code", "pattern", "hybrid")

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="chown to another uid needs root")


@pytest.fixture(autouse=True)
def _home(tmp_path, monkeypatch):
    monkeypatch.setenv("NEMOTRON_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("HOME", str(tmp_path / "userhome"))  # no safe.directory from a real ~/.gitconfig
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    (tmp_path / "userhome").mkdir()


def _repo(tmp_path: Path, name: str = "theirs") -> Path:
    r = make_repo(tmp_path / name)
    (r / "alone.py").write_text(HEADER.format(name="alone") + "import json\nprint(json.dumps(1))\n")
    (r / "config").mkdir()
    (r / "config" / "default.yaml").write_text("x: 1\n")
    git(r, "add", "-A")
    git(r, "commit", "-qm", "script")
    return r


@pytest.fixture
def theirs(tmp_path: Path) -> Path:
    r = _repo(tmp_path)
    for dirpath, _, files in os.walk(r):
        os.chown(dirpath, OTHER_UID, OTHER_UID)
        for f in files:
            os.lchown(os.path.join(dirpath, f), OTHER_UID, OTHER_UID)
    return r


@pytest.fixture
def no_git_path(tmp_path: Path) -> str:
    """A PATH holding everything of the system's but git."""
    bin_dir = tmp_path / "bin-without-git"
    bin_dir.mkdir()
    for d in ("/usr/local/bin", "/usr/bin", "/bin"):
        for name in os.listdir(d) if os.path.isdir(d) else ():
            if not name.startswith("git") and not (bin_dir / name).exists():
                (bin_dir / name).symlink_to(os.path.join(d, name))
    path = f"{Path(sys.executable).parent}:{bin_dir}"
    assert shutil.which("git", path=path) is None
    return path


@pytest.fixture
def without_git(no_git_path: str, monkeypatch) -> str:
    """This process's PATH without git."""
    monkeypatch.setenv("PATH", no_git_path)
    return no_git_path


def _values(kind: str | None) -> dict:
    if kind is None:
        return {}
    if kind == "pattern":
        return {"packager": "pattern", "packager_include_pattern": ["*.py"]}
    if kind == "hybrid":
        return {"packager": "hybrid", "packagers": {"code": {"packager": "git"}}}
    return {"packager": kind}


def test_find_repo_root_refuses_a_repository_of_another_user(theirs: Path) -> None:
    with pytest.raises(PackagingError) as exc:
        find_repo_root(theirs / "alone.py")
    assert str(exc.value) == (
        f"{theirs}: git refuses to read the repository at {theirs}: it is owned by uid {OTHER_UID}, not by you "
        f"(uid {os.geteuid()}) (git's safe.directory check), so what it holds cannot be packaged (if you trust it: "
        f"git config --global --add safe.directory {theirs}; else package from a clone you own)")


@pytest.mark.parametrize("kind", [None, *KINDS])
def test_no_packager_ships_something_else_for_a_refused_repository(theirs: Path, kind: str | None) -> None:
    spec = parse(theirs / "alone.py")  # imports only json: the default would be self_contained
    with pytest.raises(PackagingError, match="git refuses to read the repository"):
        build_packager(_values(kind), runspec=spec, script_path=spec.script_path)


def test_the_fix_in_the_message_works(theirs: Path, tmp_path: Path) -> None:
    subprocess.run(["git", "config", "--global", "--add", "safe.directory", str(theirs)], check=True,
                   env={**os.environ, "HOME": str(tmp_path / "userhome")})
    spec = parse(theirs / "alone.py")
    _, plan = build_packager({}, runspec=spec, script_path=spec.script_path)
    assert plan.repo_root == str(theirs)


@pytest.mark.parametrize("kind", ["none", "self_contained"])
def test_a_profile_that_needs_no_repository_goes_on_and_says_so(theirs: Path, kind: str, capsys) -> None:
    spec = parse(theirs / "alone.py")
    values = {"packager": kind, **({"workdir": "/code"} if kind == "none" else {})}
    _, plan = build_packager(values, runspec=spec, script_path=spec.script_path)
    assert plan.kind == kind and plan.repo_root is None
    assert any("git refuses to read the repository" in w for w in plan.warnings)
    assert "warning: packager = " in capsys.readouterr().err


@pytest.mark.parametrize("kind", [None, *KINDS])
def test_no_git_on_path_inside_a_repository(tmp_path: Path, without_git: str, kind: str | None) -> None:
    r = tmp_path / "mine"
    subprocess.run(["/usr/bin/git", "init", "-q", str(r)], check=True)
    (r / "alone.py").write_text(HEADER.format(name="alone") + "import json\n")
    spec = parse(r / "alone.py")
    with pytest.raises(PackagingError) as exc:
        build_packager(_values(kind), runspec=spec, script_path=spec.script_path)
    assert str(exc.value).startswith(f"git is not on PATH, and {r / 'alone.py'} is inside the git repository at {r}")
    assert "install git" in str(exc.value)


def test_no_git_on_path_outside_any_repository_is_fine(tmp_path: Path, without_git: str) -> None:
    d = tmp_path / "plain"
    d.mkdir()
    (d / "alone.py").write_text(HEADER.format(name="alone") + "import json\n")
    spec = parse(d / "alone.py")
    _, plan = build_packager({}, runspec=spec, script_path=spec.script_path)
    assert plan.kind == "self_contained" and plan.repo_root is None


def _cli(tmp: Path, *args: str, path: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("NEMOTRON_")}
    env.update(HOME=str(tmp / "userhome"), NEMOTRON_HOME=str(tmp / "nhome"), COLUMNS="200", NO_COLOR="1")
    if path is not None:
        env["PATH"] = path
    (tmp / "env.toml").write_text('[c]\nexecutor = "slurm"\naccount = "a"\npartition = "p"\ncontainer_image = ""\n')
    return subprocess.run([str(NEMOTRON), *args, "--env-file", str(tmp / "env.toml")], cwd=tmp, env=env,
                          capture_output=True, text=True, timeout=180, stdin=subprocess.DEVNULL)


def test_cli_dry_run_of_a_refused_repository(tmp_path: Path, theirs: Path) -> None:
    proc = _cli(tmp_path, "run", str(theirs / "alone.py"), "--batch", "c", "--dry-run")
    assert proc.returncode == 1, proc.stdout[-2000:]
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "safe.directory" in lines[0], proc.stderr
    assert "main.py" not in proc.stdout  # not packaged as self_contained


def test_cli_dry_run_without_git(tmp_path: Path, no_git_path: str) -> None:
    r = _repo(tmp_path, "mine")
    proc = _cli(tmp_path, "run", str(r / "alone.py"), "--batch", "c", "--dry-run", path=no_git_path)
    assert proc.returncode == 1, proc.stdout[-2000:] + proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: git is not on PATH, and {r / 'alone.py'}"), proc.stderr
    assert "Traceback" not in proc.stderr and "unexpected" not in proc.stderr
