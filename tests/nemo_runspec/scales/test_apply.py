"""A job's scale cell applied: its overrides (under the command line's) and image, a job outside
refused or, with --allow-untested-scale, warned about; the helpers the other scales tests share."""

from __future__ import annotations

import textwrap
from pathlib import Path

import yaml

from nemo_runspec.job.compiled import compile_job
from nemo_runspec.job.run_config import RunConfig

MATRIX = """\
# [[tool.runspec.scales]]
# configs = ["default"]
# gpu_types = ["h100"]
# nodes = [1]
# precisions = ["bf16", "fp8"]
# overrides = { "model.tp" = 1, "train.mbs" = 2 }
#
# [[tool.runspec.scales]]
# configs = ["default"]
# gpu_types = ["h100", "b200"]
# nodes = [2, 4]
# exact = false
# precisions = ["bf16"]
# gpus_per_node = 8
# image = "nvcr.io/nvidia/nemo:big"
# overrides = { "model.tp" = 4 }
"""


def _script(tmp_path: Path, matrix: str = MATRIX) -> Path:
    script = tmp_path / "train.py"
    script.write_text("# /// script\n# [tool.runspec]\n# name = \"t/train\"\n# image = \"img:1\"\n#\n"
                      "# [tool.runspec.run]\n# launch = \"direct\"\n#\n" + matrix + "# ///\nprint('hi')\n")
    (tmp_path / "config").mkdir(exist_ok=True)
    (tmp_path / "config" / "default.yaml").write_text("model:\n  tp: 1\ntrain:\n  mbs: 1\n  iters: 3\n")
    (tmp_path / "config" / "tiny.yaml").write_text("model:\n  tp: 1\ntrain:\n  mbs: 1\n")
    (tmp_path / "env.toml").write_text(textwrap.dedent("""
        [h100]
        executor = "slurm"
        account = "a"
        gpu_type = "h100"
        gpus_per_node = 8
        [nogpu_type]
        executor = "slurm"
        account = "a"
        gpus_per_node = 8
    """))
    return script


def _compile(tmp_path, *overrides, profile="h100", allow=False, config=None):
    from nemo_runspec import parse

    run = RunConfig(profile=profile, detach=profile is not None, config=config, overrides=tuple(overrides),
                    env_file=str(tmp_path / "env.toml"))
    cfg = run.recipe_config()
    cfg.ctx.allow_untested_scale = allow
    return compile_job(parse(tmp_path / "train.py"), cfg, check_artifacts=False)


def test_the_cell_applies_its_overrides_under_the_command_line(tmp_path):
    _script(tmp_path)
    job = _compile(tmp_path, "run.env.nodes=2", "train.iters=5")
    data = yaml.safe_load(job.files()["job.yaml"])
    assert data["model"]["tp"] == 4
    assert data["run"]["scale"]["cell"] == {"gpu_type": "h100", "nodes": 2, "precision": "bf16"}
    assert data["run"]["scale"]["overrides"] == {"model.tp": 4}
    assert data["run"]["scale"]["from"] == "scale matrix of train.py (scales[1])"
    assert job.run_env["container_image"] == "nvcr.io/nvidia/nemo:big"  # the runspec's image gave way
    assert job.env_sources["container_image"].startswith("scale matrix train.py scales[1] (h100)")
    typed = _compile(tmp_path, "run.env.nodes=2", "model.tp=2", "run.env.container_image=mine:1")
    assert typed.job_config.model.tp == 2  # the command line wins
    assert typed.run_env["container_image"] == "mine:1"
    assert "model.tp" not in typed.job_config.run.scale.overrides


def test_allow_untested_scale_is_one_warning(tmp_path, capsys):
    _script(tmp_path)
    job = _compile(tmp_path, "run.env.nodes=3", allow=True)
    err = capsys.readouterr().err
    assert err.count("warning:") == 1 and "running it anyway (--allow-untested-scale" in err
    assert job.job_config.run.scale.untested is True


def test_no_matrix_for_the_config_or_no_profile_checks_nothing(tmp_path):
    _script(tmp_path)
    assert "scale" not in _compile(tmp_path, "run.env.nodes=3", config="tiny").job_config.run
    assert "scale" not in _compile(tmp_path, profile=None).job_config.run


def test_without_gpu_type_any_type_matches_and_a_note_says_so(tmp_path, capsys):
    _script(tmp_path)
    job = _compile(tmp_path, "run.env.nodes=4", profile="nogpu_type")
    assert job.job_config.run.scale.cell.gpu_type == "h100"
    assert "the profile sets no gpu_type" in capsys.readouterr().err


