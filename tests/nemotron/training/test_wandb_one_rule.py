"""The CLI and the job agree on "does this job log to W&B", for every training stage.

The CLI's answer is whether it hands the job the API key (``split_env_vars`` on the
compiled job config); the job's is whether ``train.py`` starts a W&B run
(``wandb_settings`` on the ``train.yaml`` the CLI writes, loaded as the job loads it).
Both are :func:`nemo_runspec.runtime.wandb_switch.wandb_switch`; these cases are the ones on
which the two used to disagree, and the plain on/off ones.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from omegaconf import OmegaConf

from nemo_runspec import parse
from nemo_runspec.config.job_config import extract_train_config
from nemo_runspec.execution.env_vars import split_env_vars
from nemo_runspec.job.compiled import compile_job
from nemo_runspec.job.run_config import RunConfig
from nemotron.training import entry
from nemotron.training.wandb_logging import wandb_settings

RECIPES = Path(__file__).resolve().parents[3] / "src" / "nemotron" / "recipes" / "nano3"
STAGES = {"pretrain": RECIPES / "stage0_pretrain" / "train.py", "sft": RECIPES / "stage1_sft" / "train.py",
          "rl": RECIPES / "stage2_rl" / "train.py"}
KEY = "wbkey0123456789abcdef0123456789abcdef01"

# (overrides, {stage: expected}) -- expected is the one answer both sides must give
CASES = [
    ([], {"pretrain": False, "sft": False, "rl": False}),
    (["++logger.wandb_project=x"], {"pretrain": True, "sft": True, "rl": False}),
    (["++logger.wandb_enabled=true"], {"pretrain": False, "sft": False, "rl": True}),
    (["++run.wandb.project=p"], {"pretrain": True, "sft": True, "rl": True}),
    (["++run.wandb.enabled=true"], {"pretrain": True, "sft": True, "rl": True}),
    (["++run.wandb.enabled=false", "++logger.wandb_project=x"], {"pretrain": False, "sft": False, "rl": False}),
    (["++run.wandb.enabled=false", "++logger.wandb_enabled=true"], {"pretrain": False, "sft": False, "rl": False}),
    (["++run.wandb=false", "++logger.wandb_project=x"], {"pretrain": False, "sft": False, "rl": False}),
    (["++wandb.project=p"], {"pretrain": False, "sft": False, "rl": False}),
    (["++wandb.enabled=true", "++wandb.project=p"], {"pretrain": False, "sft": False, "rl": False}),
]


@pytest.fixture
def home(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("NEMOTRON_HOME", str(tmp_path / "home"))
    for var in ("NEMOTRON_ENV_FILE", "NEMOTRON_ARTIFACTS_ROOT", "WANDB_PROJECT"):
        monkeypatch.delenv(var, raising=False)
    (tmp_path / "env.toml").write_text("")
    return tmp_path


@pytest.mark.parametrize("stage", sorted(STAGES))
@pytest.mark.parametrize(("overrides", "expected"), CASES, ids=lambda v: " ".join(v) if isinstance(v, list) else "")
def test_cli_forwards_the_key_exactly_when_the_job_logs(stage, overrides, expected, home):
    job = compile_job(parse(STAGES[stage]),
                      RunConfig(config="tiny", overrides=overrides, env_file=str(home / "env.toml")),
                      check_artifacts=False)
    _plain, secrets = split_env_vars(job.job_config, None, environ={"WANDB_API_KEY": KEY}, wandb_section={})
    cli_says = "WANDB_API_KEY" in secrets

    train_yaml = home / "train.yaml"  # what the job reads, loaded the job's way
    OmegaConf.save(extract_train_config(job.job_config), train_yaml)
    cfg = entry.reference_sft_layout(entry.load_config(str(train_yaml), []), stage)
    job_says = wandb_settings(entry.wandb_view(cfg), stage, environ={}) is not None

    assert (cli_says, job_says) == (expected[stage], expected[stage])


