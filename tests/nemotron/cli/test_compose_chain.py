"""The hand-written ``execute(..., experiment=)`` of data prep and pretrain, composed into one
real local nemo-run Experiment and run: a stage chain from scratch (empty NEMOTRON_HOME).

The pretrain's ``${art:nano3-pretrain-data-tiny:latest}`` does not resolve when it is
composed (the data prep that publishes it has not run): composing checks it when the
task starts, not before; ``dependencies=`` makes the pretrain wait for the data prep.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nemo_runspec.job.run_config import RunConfig


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for var in ("NEMOTRON_ENV_FILE", "NEMOTRON_ARTIFACTS_ROOT", "RAY_ADDRESS"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("NEMOTRON_HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "env.toml").write_text("")  # no profile: local tasks
    from nemo_runspec.artifacts.registry import set_registry

    set_registry(None)  # found again, under this NEMOTRON_HOME
    yield tmp_path
    set_registry(None)


def _record(home: Path, name: str) -> dict:
    return json.loads((home / "home" / "artifacts" / name / "v1.json").read_text())


def test_data_prep_then_pretrain_composed_into_one_experiment_from_scratch(home: Path) -> None:
    import nemo_run as run

    from nemotron.cli.commands.nano3 import pretrain
    from nemotron.cli.commands.nano3.data import prep

    env_file = str(home / "env.toml")
    with run.Experiment("chain", base_dir=str(home / "exps")) as exp:
        data_task = prep.execute("pretrain", RunConfig(config="tiny", env_file=env_file), experiment=exp)
        train_task = pretrain.execute(
            RunConfig(config="tiny", env_file=env_file,
                      overrides=["fallback.max_steps=4", "fallback.eval_interval=0", "fallback.log_interval=2"]),
            experiment=exp, dependencies=[data_task])
        assert (data_task, train_task) == ("nano3-data-prep-pretrain", "nano3-pretrain")
        assert [j.dependencies for j in exp.jobs] == [[], [data_task]]
        assert not (home / "home" / "artifacts").exists()  # nothing ran yet
        exp.run(sequential=False)
    exp_dir = Path(exp._exp_dir)
    log = "".join(p.read_text() for p in (exp_dir / train_task).rglob("combined.log"))
    assert "[pretrain] step 4/4" in log and "published nano3-pretrain-model-tiny:v1" in log, log[-3000:]
    # the pretrain read its data through ${art:...} of the artifact the data prep published
    train_yaml = (exp_dir / train_task / "train.yaml").read_text()
    assert "data: nano3-pretrain-data-tiny:latest" in train_yaml and "${art:data" in train_yaml
    data, model = _record(home, "nano3-pretrain-data-tiny"), _record(home, "nano3-pretrain-model-tiny")
    assert data["created"] <= model["created"]
    assert Path(data["metadata"]["blend_path"]).is_file()
