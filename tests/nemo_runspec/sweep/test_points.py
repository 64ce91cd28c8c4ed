"""A point's saved configs, derived from its representative's compiled job
(sweep/points.py), are what compiling that point on its own writes."""

from __future__ import annotations

import copy

import pytest
import yaml
from omegaconf import OmegaConf

from nemo_runspec import parse
from nemo_runspec.config.jobdir import render_configs
from nemo_runspec.config.sweep import expand
from nemo_runspec.job.compiled import compile_job
from nemo_runspec.job.run_config import RunConfig
from nemo_runspec.sweep.points import derive, shape_of, sweep_meta
from nemotron.recipes import RECIPES_DIR

from .conftest import SECRET

PRETRAIN = RECIPES_DIR / "nano3/stage0_pretrain/train.py"


def _compile(overrides, config="tiny", profile="dev"):
    return compile_job(parse(PRETRAIN), RunConfig(profile=profile, detach=True, config=config,
                                                  overrides=tuple(overrides)), check_artifacts=False)


def _alone(point, sweep_id):
    """What compiling the point on its own renders, with the same run.sweep and argv."""
    job = _compile(point.overrides)
    data = OmegaConf.to_container(job.job_config, resolve=False)
    data["run"]["sweep"] = sweep_meta(sweep_id, point)
    cfg = OmegaConf.create(data)
    return render_configs(cfg, OmegaConf.create(_script(data)))


def _script(data):
    from nemo_runspec.config.job_config import train_data

    return train_data(copy.deepcopy(data), for_remote=True)


def _without_volatile(text):
    data = yaml.safe_load(text)
    data["run"].pop("provenance", None)  # the compile time
    data["run"].get("cli", {}).pop("argv", None)  # the command line differs by the point's value
    return data


@pytest.mark.parametrize("overrides", [
    ["train.train_iters=10,20,30", "fallback.lr=0.01"],
    ["fallback.model.n_head=1,2", "+extra.flag=true,false"],
    ["fallback.lr=range(0,0.02,0.01)", "logger.wandb_exp_name='a,b',c"],
])
def test_derived_files_are_what_a_compile_of_the_point_writes(sandbox, overrides):
    plan = expand(overrides)
    job = _compile(plan.points[0].overrides)
    done, apart = derive(job, plan.points, "sw-1")
    assert apart == [] and [d.point.index for d in done] == list(range(len(plan.points)))
    for point_job in done:
        alone = _alone(point_job.point, "sw-1")
        assert point_job.files["train.yaml"] == alone["train.yaml"]  # byte for byte
        assert _without_volatile(point_job.files["job.yaml"]) == _without_volatile(alone["job.yaml"])
        assert SECRET not in point_job.files["job.yaml"] + point_job.files["train.yaml"]
        assert yaml.safe_load(point_job.files["train.yaml"])["run"]["sweep"]["index"] == point_job.point.index


def test_a_point_whose_environment_differs_gets_a_shape_of_its_own(sandbox):
    # W&B on for one point and not the other: the job's environment differs, so it
    # cannot share the other's batch script
    plan = expand(["logger.wandb_project=null,proj"])
    job = _compile(plan.points[0].overrides)
    done, apart = derive(job, plan.points, "sw")
    assert [d.point.index for d in done] == [0]
    assert [p.index for p in apart] == [1]


def test_run_keys_and_configs_decide_the_shape():
    plan = expand(["run.env.nodes=1,2", "train.train_iters=1,2"], config="tiny,default",
                  config_names=["tiny", "default"])
    shapes = {shape_of(p) for p in plan.points}
    assert len(shapes) == 4  # 2 configs x 2 node counts; train_iters shares a shape
    assert shape_of(plan.points[0]) == (("config", "tiny"), ("run.env.nodes", "1"))


def test_a_derived_point_with_an_unknown_key_is_refused_with_did_you_mean(sandbox):
    plan = expand(["train.train_iters=1,2"])
    job = _compile(plan.points[0].overrides)
    bad = type(plan.points[1])(index=1, overrides=("train.train_iterz=2",), values={"train.train_iterz": "2"})
    with pytest.raises(Exception, match="did you mean 'train.train_iters'"):
        derive(job, [plan.points[0], bad], "sw")
