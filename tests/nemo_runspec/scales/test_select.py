"""Scale matrices: the cell a job falls in (exact and powers-of-two entries) and the nearest cells of a job outside."""

from __future__ import annotations

import pytest

from nemo_runspec.errors import ConfigError
from nemo_runspec.scales.select import Where, find, nearest
from nemo_runspec.spec.scales import Cell
from tests.nemo_runspec.scales.test_apply import _compile, _script


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


def test_selection_and_nearest_directly():
    from nemo_runspec.spec.scales import ScaleEntry

    entries = [ScaleEntry(gpu_types=("h100",), nodes=(1, 8), precisions=("bf16",)),
               ScaleEntry(gpu_types=("b200",), nodes=(2,), precisions=("fp8",), index=1)]
    assert find(entries, Where("b200", 2, None))[1] == Cell("b200", 2, "fp8")
    assert find(entries, Where("b200", 2, "bf16")) is None
    assert nearest(entries, Where("h100", 4, "bf16"), n=2) == [Cell("h100", 8, "bf16"), Cell("h100", 1, "bf16")]
