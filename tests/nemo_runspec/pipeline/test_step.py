"""A pipeline stage (step.py): what it consumes and publishes, read from its job config, and
the name of an artifact reference."""

from __future__ import annotations

from pathlib import Path

from omegaconf import OmegaConf

from nemo_runspec.pipeline.step import Step, artifact_name, consumed_artifacts, published_artifact


def test_artifact_name_drops_the_scheme_and_the_selector():
    assert artifact_name("ds:latest") == "ds"
    assert artifact_name("art://ds:v3") == "ds"
    assert artifact_name("ds") == "ds"


def test_published_artifact_is_publish_name():
    assert published_artifact(OmegaConf.create({"publish": {"name": "ckpt"}})) == "ckpt"
    assert published_artifact(OmegaConf.create({"publish": {"name": ""}})) is None
    assert published_artifact(OmegaConf.create({})) is None
    assert published_artifact({"publish": {"name": "ckpt"}}) == "ckpt"


def test_consumed_artifacts_are_the_references_the_config_uses():
    cfg = OmegaConf.create({
        "run": {"data": "ds-tiny:latest", "model": None},
        "data": {"path": "${art:data,path}"},
        "init": {"ckpt": "${art:model,path}"},  # no reference for the key: its job reports it
        "tok": {"path": "${art:tok:v2,path}"},
    })
    assert consumed_artifacts(cfg) == {"data": "ds-tiny:latest", "tok:v2": "tok:v2"}


def test_a_step_reads_its_script_runspec(tmp_path):
    script = tmp_path / "train.py"
    script.write_text('# /// script\n# [tool.runspec]\n# name = "t/train"\n#\n# [tool.runspec.run]\n'
                      '# launch = "torchrun"\n# ///\n')
    step = Step(name="pretrain", script=Path(script))
    assert step.runspec.name == "t/train" and step.launch == "torchrun"
