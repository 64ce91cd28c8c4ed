"""Recipe configs in the reference's nano3 layout, read by our train.py side:
``recipe.per_split_data_args_path``, keys that mean nothing here, ``/nemo_run/...`` paths."""

from __future__ import annotations

from pathlib import Path

from omegaconf import OmegaConf

from nemotron.training import entry
from nemotron.training import megatron_bridge as mb
from tests.nemotron.training.test_megatron_bridge import _stand_in

REFERENCE_PRETRAIN = {
    "run": {"data": "d:latest", "env": {"container": "img"}},
    "recipe": {"_target_": "pkg.recipe_config", "per_split_data_args_path": "/data/out/blend.json"},
    "train": {"train_iters": 5, "global_batch_size": 32},
    "logger": {"log_interval": 10, "wandb_project": "${run.wandb.project}"},
    "checkpoint": {"save": "/nemo_run/model", "save_interval": 20},
}

REFERENCE_SFT = {
    "recipe": {"_target_": "pkg.sft_config", "packed_sequence": True, "peft": None},
    "dataset": {"nano3_packed_sft_dir": "/data/sft", "packed_sequence_specs": {"packed_sequence_size": 4096}},
    "model": {"hidden_size": 1344, "tensor_model_parallel_size": 4},
    "checkpoint": {"finetune": True, "save": "/nemo_run/sft"},
}


def test_per_split_data_args_path_is_the_blend_megatron_bridge_reads():
    calls = {}

    def importer(dotted):
        if dotted == "pkg.recipe_config":
            return lambda: _stand_in("pretrain")
        if dotted == mb.BLEND_FIELDS:
            def blend(**kw):
                calls.update(kw)
                return "b", "bps", "s"
            return blend
        raise AssertionError(dotted)

    container = mb.build_config("pretrain", REFERENCE_PRETRAIN, importer=importer)
    assert calls == {"per_split_data_args_path": "/data/out/blend.json"}
    assert (container.dataset.blend, container.dataset.blend_per_split, container.dataset.split) == ("b", "bps", "s")
    assert container.train.train_iters == 5 and container.checkpoint.save == "/nemo_run/model"


def test_data_path_wins_over_per_split_data_args_path_and_that_is_said():
    calls = {}

    def importer(dotted):
        if dotted == mb.BLEND_FIELDS:
            return lambda **kw: calls.update(kw) or (None, None, None)
        return lambda: _stand_in("pretrain")

    cfg = {**REFERENCE_PRETRAIN, "data": {"data_path": "/ours"}}
    mb.build_config("pretrain", cfg, importer=importer)
    assert calls == {"per_split_data_args_path": "/ours/blend.json"}
    assert ("recipe.per_split_data_args_path", "data.data_path is set and names the data") in \
        mb.unused_keys("pretrain", cfg)


def test_the_reference_pretrain_layout_has_no_unused_keys():
    assert mb.unused_keys("pretrain", REFERENCE_PRETRAIN) == []


def test_the_reference_sft_layout_names_what_means_nothing_here():
    unused = dict(mb.unused_keys("sft", REFERENCE_SFT))
    assert set(unused) == {"recipe.packed_sequence", "recipe.peft", "dataset.nano3_packed_sft_dir",
                           "dataset.packed_sequence_specs.packed_sequence_size", "model.hidden_size",
                           "checkpoint.finetune"}
    assert "no Megatron-Bridge recipe function is called here" in unused["recipe.peft"]  # the CPU fallback
    assert "FIELDS" in unused["model.hidden_size"]


def test_warnings_are_one_line_each(capsys):
    entry.warn_unused_keys(OmegaConf.create(REFERENCE_SFT), "sft", "sft.yaml")
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 6 and all(ln.startswith("warning: sft.yaml: key '") for ln in lines)
    assert any("'model.hidden_size' means nothing to nano3/sft here" in ln for ln in lines)


def test_fallback_data_key_follows_the_layout():
    assert entry.data_key(OmegaConf.create(REFERENCE_PRETRAIN), "pretrain") == "recipe.per_split_data_args_path"
    ours = OmegaConf.create({**REFERENCE_PRETRAIN, "data": {"data_path": "${art:data,path}"}})
    assert entry.data_key(ours, "pretrain") == "data.data_path"  # and nothing was resolved
    assert entry.data_key(OmegaConf.create(REFERENCE_PRETRAIN), "sft") == "data.data_path"


def test_nemo_run_paths_are_the_job_dir_where_there_is_no_nemo_run(tmp_path, monkeypatch):
    monkeypatch.setenv("NEMOTRON_JOB_DIR", str(tmp_path))
    monkeypatch.setattr(entry, "NEMO_RUN_DIR", tmp_path / "absent" / "nemo_run")
    absent = entry.NEMO_RUN_DIR
    assert entry.job_path(f"{absent}/model") == str(tmp_path / "model")
    assert entry.job_path("ckpt") == str(tmp_path / "ckpt")
    assert entry.job_path("/elsewhere/x") == "/elsewhere/x"
    absent.mkdir(parents=True)  # in a container, /nemo_run is the mounted job dir: used as is
    assert entry.job_path(f"{absent}/model") == f"{absent}/model"
    assert Path(entry.job_path("~/x")) == Path.home() / "x"


def test_the_reference_recipe_arguments_reach_the_recipe_that_takes_them():
    """recipe.peft / recipe.packed_sequence: the 0.3.0 line's finetune_config gets them (as the
    reference passes them); on 0.3.1 and later the recipe takes none, and the job says so."""
    from nemotron.training import bridge_lines as bl

    cfg = {**REFERENCE_SFT, "recipe": {**REFERENCE_SFT["recipe"], "_target_": None}}
    assert mb.ignored_recipe_keys("sft", cfg, bl.line_for("0.3.0rc0")) == []
    assert not [k for k, _ in mb.unused_keys("sft", cfg, recipe_line=bl.line_for("0.3.0rc0")) if k.startswith("recipe.")]
    on_04 = dict(mb.unused_keys("sft", cfg, recipe_line=bl.line_for("0.4.0")))
    assert "megatron-bridge 0.4 (ValidationConfig) takes no such argument" in on_04["recipe.peft"]
    assert mb.ignored_recipe_keys("sft", cfg, bl.line_for("0.4.0")) == ["recipe.packed_sequence", "recipe.peft"]
    assert mb.ignored_recipe_keys("sft", REFERENCE_SFT, bl.line_for("0.3.0")) == [  # a function of its own
        "recipe.packed_sequence", "recipe.peft"]
