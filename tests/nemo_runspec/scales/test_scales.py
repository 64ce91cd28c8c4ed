"""Scale matrices: [[tool.runspec.scales]] read and checked, a job's cell picked with its
overrides (under the command line's) and their provenance, a job outside refused with the
nearest cells or, with --allow-untested-scale, warned about."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
import yaml

from nemo_runspec import parse_text
from nemo_runspec._parser import collect_errors
from nemo_runspec.errors import ConfigError, RunspecError
from nemo_runspec.job import compile_job
from nemo_runspec.run import RunConfig
from nemo_runspec.scales.check import check_against_configs
from nemo_runspec.scales.model import Cell
from nemo_runspec.scales.select import Where, find, nearest

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
    from nemo_runspec.cli.recipe_config import RecipeConfig

    run = RunConfig(profile=profile, detach=profile is not None, config=config, overrides=tuple(overrides),
                    env_file=str(tmp_path / "env.toml"))
    cfg = RecipeConfig.from_run_config(run)
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


def test_the_dry_run_shows_the_keys_the_matrix_set_with_their_source(tmp_path):
    import io

    from rich.console import Console

    from nemo_runspec.cli.display import display_dry_run, dry_run_sections

    _script(tmp_path)
    job = _compile(tmp_path, "run.env.nodes=2")
    rows = dry_run_sections(job.job_config, job.train_config)["scale"]
    assert rows == [("(cell)", "h100 x 2 node(s) bf16", "scale matrix of train.py (scales[1])"),
                    ("model.tp", "4", "scale matrix of train.py (scales[1])")]
    out = io.StringIO()
    display_dry_run(job.job_config, job.train_config, console=Console(file=out, width=200))
    assert "config keys from the scale matrix" in out.getvalue()
    assert "│ model.tp │ 4" in out.getvalue()
    typed = _compile(tmp_path, "run.env.nodes=2", "model.tp=2")  # the command line's key is not the matrix's
    assert [r[0] for r in dry_run_sections(typed.job_config, typed.train_config)["scale"]] == ["(cell)"]
    untested = _compile(tmp_path, "run.env.nodes=3", allow=True)
    assert dry_run_sections(untested.job_config, untested.train_config)["scale"][0][1].startswith("none: outside")
    assert dry_run_sections(_compile(tmp_path, config="tiny").job_config, {})["scale"] == []


def test_non_exact_entries_take_powers_of_two_above(tmp_path):
    _script(tmp_path)
    assert _compile(tmp_path, "run.env.nodes=16").job_config.run.scale.cell.nodes == 16
    with pytest.raises(ConfigError):
        _compile(tmp_path, "run.env.nodes=12")


def test_a_job_outside_the_matrix_names_the_nearest_cells(tmp_path):
    _script(tmp_path)
    with pytest.raises(ConfigError) as err:
        _compile(tmp_path, "run.env.nodes=3")
    text = str(err.value)
    assert "t/train (config default) is not known to work at h100 x 3 nodes of 8 GPUs" in text
    assert "nearest supported: h100 x 4 nodes bf16, h100 x 2 nodes bf16, h100 x 1 node bf16" in text
    assert "--allow-untested-scale" in text and "\n" not in text
    with pytest.raises(ConfigError, match="h100 x 2 nodes of 8 GPUs fp8"):
        _compile(tmp_path, "run.env.nodes=2", "run.env.precision=fp8")


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


def test_selection_and_nearest_directly():
    from nemo_runspec.scales.model import ScaleEntry

    entries = [ScaleEntry(gpu_types=("h100",), nodes=(1, 8), precisions=("bf16",)),
               ScaleEntry(gpu_types=("b200",), nodes=(2,), precisions=("fp8",), index=1)]
    assert find(entries, Where("b200", 2, None))[1] == Cell("b200", 2, "fp8")
    assert find(entries, Where("b200", 2, "bf16")) is None
    assert nearest(entries, Where("h100", 4, "bf16"), n=2) == [Cell("h100", 8, "bf16"), Cell("h100", 1, "bf16")]


@pytest.mark.parametrize(("matrix", "words"), [
    ('# [[tool.runspec.scales]]\n# gpu_type = ["h100"]\n# nodes = [1]\n# precisions = ["bf16"]\n',
     "unknown key 'gpu_type' in scales[0] (did you mean 'gpu_types'?"),
    ('# [[tool.runspec.scales]]\n# gpu_types = ["h100"]\n# nodes = [0]\n# precisions = ["bf16"]\n',
     "'scales[0].nodes' must be a non-empty list of node counts"),
    ('# [[tool.runspec.scales]]\n# gpu_types = ["h100"]\n# nodes = [1]\n# precisions = ["bf61"]\n',
     "unknown precision 'bf61' in scales[0].precisions (did you mean 'bf16'?"),
    ('# [[tool.runspec.scales]]\n# gpu_types = ["H100"]\n# nodes = [1]\n# precisions = ["bf16"]\n',
     "invalid name 'H100'"),
    ('# [[tool.runspec.scales]]\n# gpu_types = ["h100"]\n# nodes = [1]\n# precisions = ["bf16"]\n'
     '# overrides = { "run.env.nodes" = 2 }\n', "invalid config key 'run.env.nodes'"),
    ('# [[tool.runspec.scales]]\n# gpu_types = ["h100"]\n# nodes = [1, 2]\n# precisions = ["bf16"]\n#\n'
     '# [[tool.runspec.scales]]\n# gpu_types = ["h100"]\n# nodes = [2]\n# precisions = ["bf16"]\n',
     "scale cell h100 x 2 nodes bf16 is declared twice (entries 0 and 1)"),
])
def test_runspec_validate_checks_the_matrix(tmp_path, matrix, words):
    script = _script(tmp_path, matrix)
    errors = collect_errors(script)
    assert any(words in str(e) for e in errors), [str(e) for e in errors]
    assert all(str(e).startswith(f"{script}:") for e in errors)  # file and line


def test_validate_checks_the_overrides_against_the_configs(tmp_path):
    _script(tmp_path, MATRIX.replace('"train.mbs" = 2', '"train.mbz" = 2'))
    from nemo_runspec import parse

    errors = check_against_configs(parse(tmp_path / "train.py"))
    assert [str(e) for e in errors] == [
        f"{tmp_path / 'train.py'}: scales[0].overrides sets 'train.mbz', which config 'default' does not have "
        "(did you mean 'train.mbs'?)"]
    _script(tmp_path, MATRIX.replace('configs = ["default"]', 'configs = ["defualt"]', 1))
    errors = check_against_configs(parse(tmp_path / "train.py"))
    assert "is for config 'defualt'" in str(errors[0]) and "did you mean 'default'?" in str(errors[0])


def test_the_nano3_recipes_matrices_fit_their_configs():
    from nemo_runspec import parse
    from nemotron.recipes import RECIPES_DIR

    for script in ("stage0_pretrain/train.py", "stage1_sft/train.py", "stage2_rl/train.py"):
        spec = parse(RECIPES_DIR / "nano3" / script)
        assert spec.scales, script
        assert check_against_configs(spec) == [], script
        assert any(e.configs == ("tiny",) and e.gpu_types == ("cpu",) for e in spec.scales), script


def test_parse_text_keeps_the_entries():
    spec = parse_text('# /// script\n# [tool.runspec]\n# name = "x"\n#\n' + MATRIX + "# ///\n", path="x.py")
    assert [e.nodes for e in spec.scales] == [(1,), (2, 4)]
    assert spec.to_dict()["scales"][1]["exact"] is False
    with pytest.raises(RunspecError):
        parse_text('# /// script\n# [tool.runspec]\n# name = "x"\n# scales = 3\n# ///\n', path="x.py")
