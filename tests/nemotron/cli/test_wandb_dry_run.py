"""env.toml [wandb] + [artifacts] backend = "wandb" through a Slurm --dry-run: what reaches the job.

The dry run prints the job config, the train config and the exact sbatch script a
submission writes; the API key must be in none of them (it goes to the 0600
secrets file the script sources), and the CLI must not even import wandb, so it
cannot make a W&B network call.
"""

from __future__ import annotations

import os
import subprocess
import textwrap
from pathlib import Path

from tests.nemotron_cli import NEMOTRON, job_errors

ROOT = Path(__file__).resolve().parents[3]
KEY = "wbkey0123456789abcdef0123456789abcdef01"


def test_wandb_settings_reach_the_script_and_the_key_only_the_secrets_file(tmp_path: Path):
    (tmp_path / "env.toml").write_text(textwrap.dedent("""
        [wandb]
        project = "nano3-proj"
        entity = "team"
        api_key_env = "MY_WB_KEY"
        mode = "offline"
        tags = ["a", "b"]

        [artifacts]
        backend = "wandb"

        [dev]
        executor = "slurm"
        account = "acct"
        partition = "batch"
    """))
    stub = tmp_path / "stub"
    stub.mkdir()
    marker = tmp_path / "wandb-imported"
    (stub / "wandb.py").write_text(f"open({str(marker)!r}, 'w').close()\nraise ImportError('stub')\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NEMOTRON_", "WANDB_"))}
    env.update(MY_WB_KEY=KEY, NEMOTRON_HOME=str(tmp_path / "nh"), HOME=str(tmp_path), COLUMNS="250",
               PYTHONPATH=str(stub), WANDB_BASE_URL="http://127.0.0.1:9", HTTPS_PROXY="http://127.0.0.1:9")
    proc = subprocess.run([str(NEMOTRON), "nano3", "pretrain", "-c", "tiny", "--batch", "dev", "--dry-run",
                           "--env-file", str(tmp_path / "env.toml"), "logger.wandb_project=${run.wandb.project}"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert KEY not in out + proc.stderr
    for line in ("export WANDB_PROJECT=nano3-proj", "export WANDB_ENTITY=team", "export WANDB_NAME=nano3-pretrain",
                 "export WANDB_MODE=offline", "export WANDB_TAGS=a,b",
                 "export NEMOTRON_ARTIFACTS_ROOT=wandb://team/nano3-proj"):
        assert line in out
    assert ".nemotron-secrets.env" in out and "api_key_env: MY_WB_KEY" in out
    assert not marker.exists(), "the CLI imported wandb"
    assert not (tmp_path / "nh" / "jobs").exists()  # a dry run writes no job dir


def test_a_run_with_the_w_and_b_registry_but_no_wandb_package_prints_only_our_line(tmp_path: Path):
    """The job resolves ``${art:...}`` through OmegaConf, which wraps the registry's error
    ("ArtifactError raised while resolving interpolation: ..."); the user reads our line alone."""
    (tmp_path / "env.toml").write_text('[wandb]\nproject = "p"\nentity = "e"\n[artifacts]\nbackend = "wandb"\n')
    stub = tmp_path / "stub"
    stub.mkdir()
    (stub / "wandb.py").write_text("raise ImportError('No module named wandb')\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NEMOTRON_", "WANDB_"))}
    env.update(NEMOTRON_HOME=str(tmp_path / "nh"), HOME=str(tmp_path), PYTHONPATH=f"{stub}:{ROOT / 'src'}",
               WANDB_BASE_URL="http://127.0.0.1:9", HTTPS_PROXY="http://127.0.0.1:9")
    proc = subprocess.run([str(NEMOTRON), "nano3", "pretrain", "-c", "tiny", "--env-file", str(tmp_path / "env.toml")],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2, proc.stderr
    errors = job_errors(proc.stderr)  # (the local ending repeats the job's last error once)
    assert errors == ["error: W&B is configured but the wandb package is not installed (pip install 'nemotron[wandb]')"]
    assert "Traceback" not in proc.stderr
