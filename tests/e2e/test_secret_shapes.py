"""Issue 30, class 4, on the local cluster: tokens under innocent names (``NOTE = "hf_..."``,
a password inside ``DB_URL``) reach the job through its 0600 secrets file, never the
sbatch script Slurm keeps, its saved environment, ``scontrol show job``, ``sacct`` or
any file; a token in a job comment is refused before anything is submitted."""

from __future__ import annotations

import hashlib
import re
import secrets as pysecrets
import subprocess
import sys
from pathlib import Path

import pytest

from .helpers import cli_env, held_profile_env

pytestmark = [pytest.mark.slurm]

NEMOTRON = Path(sys.executable).with_name("nemotron")
SCRIPT = '''\
# /// script
# [tool.runspec]
# name = "e2e/shapes"
# [tool.runspec.run]
# launch = "direct"
# ///
import hashlib, os
for name in ("NOTE", "DB_URL", "KEYID"):
    print("HASH", name, hashlib.sha256(os.environ[name].encode()).hexdigest(), flush=True)
'''


@pytest.fixture
def shaped() -> dict[str, str]:
    return {"NOTE": "hf_" + pysecrets.token_hex(16),
            "DB_URL": f"postgres://app:{pysecrets.token_hex(8)}@db.internal/x",
            "KEYID": "AKIA" + pysecrets.token_hex(8).upper()}


def _project(tmp_path: Path) -> Path:
    (tmp_path / "proj" / "config").mkdir(parents=True)
    (tmp_path / "proj" / "config" / "default.yaml").write_text("x: 1\n")
    script = tmp_path / "proj" / "shapes.py"
    script.write_text(SCRIPT)
    return script


def _env_vars(values: dict[str, str]) -> str:
    return "env_vars = { " + ", ".join(f'{k} = "{v}"' for k, v in values.items()) + ', GREETING = "hi" }\n'


def _needles(values: dict[str, str]) -> list[str]:
    """What must appear nowhere: each token, and the password of the URL."""
    pw = values["DB_URL"].split(":")[2].split("@")[0]
    return [values["NOTE"], values["KEYID"], pw]


def _grep(root: Path, needles: list[str]) -> list[str]:
    """Files under ``root`` holding a needle, the 0600 secrets file aside."""
    hits = []
    for p in root.rglob("*"):
        if p.is_file() and p.name != ".nemotron-secrets.env":
            data = p.read_bytes()
            hits += [f"{p}: {n[:6]}..." for n in needles if n.encode() in data]
    return hits


def test_pending_job_keeps_shaped_secrets_out_of_slurm(tmp_path, slurm_cluster, shaped):
    env = held_profile_env(tmp_path, slurm_cluster)
    Path(env["NEMOTRON_ENV_FILE"]).write_text(Path(env["NEMOTRON_ENV_FILE"]).read_text() + _env_vars(shaped))
    proc = subprocess.run([str(NEMOTRON), "run", str(_project(tmp_path)), "--batch", "held"], env=env,
                          cwd=tmp_path, capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    job_id = re.search(r'"job_id":\s*"?(\d+)', proc.stdout).group(1)
    needles = _needles(shaped)
    try:
        saved = [p for p in slurm_cluster.state_dir.glob(f"**/job.{job_id}/*") if p.is_file()]
        assert {p.name for p in saved} >= {"script", "environment"}, saved
        script = next(p for p in saved if p.name == "script").read_bytes()
        assert b"export GREETING=hi" in script and b".nemotron-secrets.env" in script  # the right file
        for p in saved:
            assert not [n for n in needles if n.encode() in p.read_bytes()], p
        views = subprocess.run(["scontrol", "show", "job", "-dd", job_id], capture_output=True, text=True,
                               timeout=30).stdout
        assert job_id in views and not [n for n in needles if n in views]
        assert not [n for n in needles if n in proc.stdout + proc.stderr]
        home = Path(env["NEMOTRON_HOME"])
        assert _grep(home, needles) == []
        secret_files = list(home.rglob(".nemotron-secrets.env"))  # holds them until the job starts
        assert len(secret_files) == 1 and secret_files[0].stat().st_mode & 0o777 == 0o600
        assert all(n.encode() in secret_files[0].read_bytes() for n in needles)
    finally:
        subprocess.run(["scancel", job_id], capture_output=True, timeout=30)


def test_the_job_gets_them_through_its_secrets_file(tmp_path, slurm_cluster, shaped):
    env = cli_env(tmp_path, slurm_cluster, _env_vars(shaped))
    proc = subprocess.run([str(NEMOTRON), "run", str(_project(tmp_path)), "--run", "cluster"], env=env,
                          cwd=tmp_path, capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    for name, value in shaped.items():
        assert f"HASH {name} {hashlib.sha256(value.encode()).hexdigest()}" in proc.stdout
    assert _grep(Path(env["NEMOTRON_HOME"]), _needles(shaped)) == []
    assert not list(Path(env["NEMOTRON_HOME"]).rglob(".nemotron-secrets.env"))  # deleted by the job
    assert not [n for n in _needles(shaped) if n in proc.stdout + proc.stderr]


def test_a_token_in_the_job_comment_is_refused_before_submission(tmp_path, slurm_cluster, shaped):
    env = cli_env(tmp_path, slurm_cluster, f'sbatch_options = {{ comment = "{shaped["NOTE"]}" }}\n')
    proc = subprocess.run([str(NEMOTRON), "run", str(_project(tmp_path)), "--batch", "cluster"], env=env,
                          cwd=tmp_path, capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)
    assert proc.returncode == 2
    assert proc.stderr.strip().endswith("never in a job comment, name, command or other setting)")
    assert "key 'sbatch_options.comment' in [cluster] holds what looks like a credential" in proc.stderr
    assert shaped["NOTE"] not in proc.stderr + proc.stdout
    assert not (Path(env["NEMOTRON_HOME"]) / "jobs" / "experiments").exists()
