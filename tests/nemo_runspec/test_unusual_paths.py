"""Issue 30, class 2: unusual but legal paths, without the cluster (tests/e2e/test_unusual_paths.py
submits for real).

Property tests over path characters: a job dir a Slurm batch script can carry is
accepted, any other is one line naming it before anything is staged; a local run
(no script in between) takes any path, its home, its profile ``job_dir`` and its
repo included; the packaging step quotes every path; a file name that is not
UTF-8 is named.
"""

from __future__ import annotations

import os
import string
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nemo_runspec.errors import LocalPathError, PackagingError
from nemo_runspec.script_values import KINDS, check_cluster_dir

NEMOTRON = Path(sys.executable).with_name("nemotron")
SCRIPT = textwrap.dedent("""\
    # /// script
    # [tool.runspec]
    # name = "t/hello"
    # [tool.runspec.run]
    # launch = "direct"
    # ///
    import os, sys
    print("HELLO", os.getcwd(), sys.argv[-1], flush=True)
""")
UNUSUAL = st.text(alphabet=string.ascii_letters + " '\"$`;&|()<>*?[]\\!#~é漢ß→-_.,=@%+:\t", min_size=1, max_size=12)
SAFE = KINDS["path"][0]


@settings(max_examples=300, deadline=None)
@given(name=UNUSUAL)
def test_a_cluster_job_dir_is_accepted_or_refused_in_one_line(name: str) -> None:
    base = f"/tmp/x/{name}"
    if SAFE.fullmatch(base):
        check_cluster_dir(base, from_profile=False)
        return
    with pytest.raises(LocalPathError) as exc:
        check_cluster_dir(base, from_profile=False)
    line = str(exc.value)
    assert "\n" not in line.replace(base, "") and line.startswith(f"{base}: the job dir ($NEMOTRON_HOME/jobs) holds ")
    assert "set job_dir in the profile" in line


@pytest.mark.parametrize("base", ["/tmp/ünïcødé/jobs", "/tmp/漢字/jobs", "/tmp/a_b-c.d/e@f+g=h%i:j,k~l"])
def test_letters_of_any_script_are_fine(base: str) -> None:
    check_cluster_dir(base, from_profile=True)


def test_length_limits() -> None:
    check_cluster_dir("/" + "/".join(["d" * 200] * 16), from_profile=False)  # 3216 bytes: fits
    with pytest.raises(LocalPathError, match="is 3417 bytes long"):
        check_cluster_dir("/" + "/".join(["d" * 200] * 17), from_profile=False)
    with pytest.raises(LocalPathError, match="has a name of 256 bytes"):
        check_cluster_dir("/tmp/" + "n" * 256, from_profile=True)


def _run(tmp: Path, *args: str, home: Path, env_toml: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("NEMOTRON_")}
    env.update(HOME=str(tmp), NEMOTRON_HOME=str(home), COLUMNS="200", NO_COLOR="1")
    if env_toml is not None:
        env["NEMOTRON_ENV_FILE"] = str(env_toml)
    return subprocess.run([str(NEMOTRON), *args], cwd=tmp, env=env, capture_output=True, text=True, timeout=300,
                          stdin=subprocess.DEVNULL)


def _project(root: Path) -> Path:
    (root / "sub dir" / "config").mkdir(parents=True)
    (root / "sub dir" / "config" / "default.yaml").write_text("x: 1\n")
    script = root / "sub dir" / "hello.py"
    script.write_text(SCRIPT)
    return script


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(home=UNUSUAL.filter(lambda n: n.strip(" .") and "/" not in n), repo=UNUSUAL.filter(lambda n: n.strip(" .")),
       job_dir=UNUSUAL.filter(lambda n: n.strip(" .")))
def test_a_local_run_takes_any_home_repo_and_job_dir(tmp_path_factory, home: str, repo: str, job_dir: str) -> None:
    tmp = tmp_path_factory.mktemp("p")
    script = _project(tmp / repo.replace("/", "_"))
    env_toml = tmp / "env.toml"
    env_toml.write_text(f'[loc]\nexecutor = "local"\njob_dir = {_toml(str(tmp / job_dir.replace("/", "_")))}\n')
    for extra in ([], ["--run", "loc"]):
        proc = _run(tmp, "run", str(script), *extra, home=tmp / home, env_toml=env_toml)
        assert proc.returncode == 0, proc.stderr[-2000:]
        hello = next(ln for ln in proc.stdout.splitlines() if ln.startswith("HELLO"))
        where = tmp / (job_dir.replace("/", "_") if extra else home) / ("" if extra else "jobs") / "t-hello"
        assert hello.startswith(f"HELLO {str(where).rstrip('/')}/"), (hello, where)


def _toml(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\t", "\\t") + '"'


def test_a_home_with_a_space_on_a_local_tunnel_is_refused_up_front(tmp_path: Path) -> None:
    home = tmp_path / "nemo home"
    env_toml = tmp_path / "env.toml"
    env_toml.write_text('[c]\nexecutor = "slurm"\naccount = "a"\npartition = "p"\ncontainer_image = ""\n')
    script = _project(tmp_path / "r")
    proc = _run(tmp_path, "run", str(script), "--batch", "c", "--dry-run", home=home, env_toml=env_toml)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.strip() == (
        f"error: {home}/jobs: the job dir ($NEMOTRON_HOME/jobs) holds ' ', which the batch script of a Slurm job "
        "cannot carry: its paths are pasted into it as they are (srun --chdir, --output) (set job_dir in the "
        "profile to a directory without spaces or shell characters that the compute nodes see, or point "
        "NEMOTRON_HOME at one)")
    env_toml.write_text(env_toml.read_text() + f'job_dir = "{tmp_path / "plain"}"\n')  # the fix: a dry run renders
    proc = _run(tmp_path, "run", str(script), "--batch", "c", "--dry-run", home=home, env_toml=env_toml)
    assert proc.returncode == 0, proc.stderr
    bad = tmp_path / "bad dir"
    env_toml.write_text(env_toml.read_text().replace(str(tmp_path / "plain"), str(bad)))
    proc = _run(tmp_path, "run", str(script), "--batch", "c", "--dry-run", home=home, env_toml=env_toml)
    assert proc.returncode == 2 and proc.stderr.startswith(f"error: {env_toml}:6: key 'job_dir' in [c]: ")


def test_a_script_path_with_a_space_is_quoted_in_the_batch_script(tmp_path: Path) -> None:
    env_toml = tmp_path / "env.toml"
    env_toml.write_text('[c]\nexecutor = "slurm"\naccount = "a"\npartition = "p"\ncontainer_image = ""\n'
                        'packager = "pattern"\npackager_include_pattern = ["**"]\n'
                        f'packager_relative_path = "{tmp_path / "r"}"\n')
    script = _project(tmp_path / "r")
    proc = _run(tmp_path, "run", str(script), "--batch", "c", "--dry-run", home=tmp_path / "h", env_toml=env_toml)
    assert proc.returncode == 0, proc.stderr
    launch = next(ln for ln in proc.stdout.splitlines() if ln.startswith("exec python ") or "exec python" in ln)
    assert "'" in launch and "sub dir/hello.py'" in launch  # quoted in runspec_launch.sh
    srun = [ln for ln in proc.stdout.splitlines() if ln.startswith("srun ")]
    assert srun and all("sub dir" not in ln for ln in srun)


@pytest.mark.parametrize("kind", ["code", "pattern"])
def test_a_file_name_that_is_not_utf8_is_named(tmp_path: Path, kind: str) -> None:
    from nemo_runspec import parse
    from nemo_runspec.packaging.select import build_packager
    from tests.nemo_runspec.packaging.git_repos import make_repo

    repo = make_repo(tmp_path / "repo")
    script = repo / "hello.py"
    script.write_text(SCRIPT.replace("import os, sys", "import os, sys\nimport proj"))
    with open(os.fsencode(str(repo)) + b"/bad\xff\xfe.txt", "wb") as f:
        f.write(b"x")
    spec = parse(script)
    values = {"packager": kind, **({"packager_include_pattern": ["*"]} if kind == "pattern" else {})}
    with pytest.raises(PackagingError) as exc:
        packager, plan = build_packager(values, runspec=spec, script_path=spec.script_path, repo_root=repo,
                                        use_cache=False)
        packager.package(repo, str(tmp_path / "job"), "t")
    assert "bad\\xff\\xfe.txt: its name is not UTF-8" in str(exc.value)


