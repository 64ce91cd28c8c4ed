"""Scale matrices checked against the recipe's configs: every override key a matrix sets exists in the config it names."""

from __future__ import annotations

from nemo_runspec.scales.check import check_against_configs
from tests.nemo_runspec.scales.test_apply import MATRIX, _script


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
