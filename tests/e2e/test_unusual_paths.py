"""Issue 30, class 2, on the local cluster: real submissions with unusual but legal paths.

A ``NEMOTRON_HOME`` with a space (``/Users/Jane Doe``) staged and uploaded over
SSH, or with the profile's ``job_dir`` on a local tunnel; a unicode home; a home
3,200 bytes long; a repository and a script directory with spaces. Each job
runs the packaged script and exits 0.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from .helpers import cli_env

pytestmark = [pytest.mark.slurm]

NEMOTRON = Path(sys.executable).with_name("nemotron")
SCRIPT = textwrap.dedent("""\
    # /// script
    # [tool.runspec]
    # name = "e2e/paths"
    # [tool.runspec.run]
    # launch = "direct"
    # ///
    import os
    import helper
    print("PATHS-OK", helper.VALUE, os.getcwd(), flush=True)
""")


def _repo(root: Path) -> Path:
    """A git repository whose script imports a sibling (so the code packager ships the tree)."""
    d = root / "my scripts"
    (d / "config").mkdir(parents=True)
    (d / "config" / "default.yaml").write_text("x: 1\n")
    (d / "helper.py").write_text("VALUE = 42\n")
    script = d / "paths.py"
    script.write_text(SCRIPT)
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@e", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@e",
           "PATH": "/usr/bin:/bin"}
    for cmd in (["git", "init", "-q"], ["git", "add", "-A"], ["git", "commit", "-qm", "init"]):
        subprocess.run(cmd, cwd=root, env=env, check=True, capture_output=True)
    return script


def _submit(tmp_path: Path, cluster, home: Path, extra: str = "", profile: str = "cluster",
            repo: str = "a repo") -> subprocess.CompletedProcess[str]:
    script = _repo(tmp_path / repo)
    env = cli_env(tmp_path, cluster, extra, NEMOTRON_HOME=str(home))
    proc = subprocess.run([str(NEMOTRON), "run", str(script), "--run", profile], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "PATHS-OK 42" in proc.stdout
    return proc


def test_home_with_a_space_over_ssh(tmp_path, slurm_cluster, ssh_target):
    remote = tmp_path / "remote-jobs"
    extra = textwrap.dedent(f"""
        [over-ssh]
        executor = "slurm"
        account = "{slurm_cluster.account}"
        partition = "{slurm_cluster.default_partition}"
        container_image = ""
        gpus_per_node = 0
        time = "00:05:00"
        tunnel = "ssh"
        host = "{ssh_target.host}"
        port = {ssh_target.port}
        user = "{ssh_target.user}"
        identity = "{ssh_target.identity}"
        remote_job_dir = "{remote}"
    """)
    home = tmp_path / "Jane Doe's home $x"
    proc = _submit(tmp_path, slurm_cluster, home, extra, profile="over-ssh")
    assert str(remote) in proc.stdout and any(home.rglob("*.tar.gz"))  # staged under the odd home


def test_home_with_a_space_and_the_profile_job_dir(tmp_path, slurm_cluster):
    home = tmp_path / "nemo home"
    proc = _submit(tmp_path, slurm_cluster, home, f'job_dir = "{tmp_path / "plain-jobs"}"\n')
    assert str(tmp_path / "plain-jobs") in proc.stdout


def test_unicode_home(tmp_path, slurm_cluster):
    home = tmp_path / "ünïcødé-漢字"
    proc = _submit(tmp_path, slurm_cluster, home, repo="répo ü")
    assert str(home) in proc.stdout


def test_a_long_home(tmp_path, slurm_cluster):
    home = tmp_path.joinpath(*["d" * 200] * 15)  # about 3,100 bytes, the job's paths below it still fit
    assert 3000 < len(str(home / "jobs")) < 3400
    proc = _submit(tmp_path, slurm_cluster, home)
    assert str(home) in proc.stdout
