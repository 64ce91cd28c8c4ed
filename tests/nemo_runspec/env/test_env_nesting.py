"""An env.toml nested deeper than Python's recursion allows is a one-line error naming
the file and line, for arrays and inline tables alike, not a RecursionError."""

from __future__ import annotations

import pytest

from nemo_runspec.env.file import load_env_file
from nemo_runspec.errors import EnvFileError


@pytest.mark.parametrize(("opener", "closer"), [("[", "]"), ("{a = ", "}")])
def test_deep_nesting_is_a_one_line_error(tmp_path, opener, closer):
    path = tmp_path / "env.toml"
    path.write_text('[p]\nexecutor = "local"\n\nx = ' + opener * 5000 + "1" + closer * 5000 + "\n")
    with pytest.raises(EnvFileError) as err:
        load_env_file(path)
    assert str(err.value).startswith(f"{path}:4: invalid TOML: values nested too deeply")
    assert "\n" not in str(err.value)


def test_a_few_levels_still_load(tmp_path):
    path = tmp_path / "env.toml"
    path.write_text('[p]\nexecutor = "local"\nx = [[[1]]]\n')
    assert load_env_file(path) is not None
