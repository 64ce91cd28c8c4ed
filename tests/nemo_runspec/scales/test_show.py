"""The scale matrix as a table (``--scales``, ``nemotron runspec scales``): one row per entry,
aligned columns, JSON that round-trips the entries, and a line for a recipe without a matrix."""

from __future__ import annotations

import io
import json

from nemo_runspec import parse_text
from nemo_runspec.scales.show import matrix_rows, print_matrix
from tests.nemo_runspec.scales.test_apply import MATRIX


def _spec(matrix: str = MATRIX):
    return parse_text('# /// script\n# [tool.runspec]\n# name = "t/train"\n#\n' + matrix + "# ///\n",
                      path="train.py")


def test_one_row_per_entry_with_its_overrides_and_image():
    assert matrix_rows(_spec()) == [
        ["default", "h100", "1", "bf16, fp8", "-", 'model.tp=1 train.mbs=2', "-"],
        ["default", "h100, b200", "2, 4, and powers of two above", "bf16", "8",
         'image=nvcr.io/nvidia/nemo:big model.tp=4', "-"],
    ]


def test_the_table_has_a_header_and_aligned_columns():
    out = io.StringIO()
    assert print_matrix(_spec(), out=out) == 0
    head, *rows = out.getvalue().splitlines()[1:]
    assert head.split() == ["CONFIGS", "GPU", "TYPES", "NODES", "PRECISIONS", "GPUS/NODE", "OVERRIDES", "SOURCE"]
    assert len(rows) == 2
    assert head.index("PRECISIONS") == rows[0].index("bf16, fp8") == rows[1].index("bf16")


def test_json_carries_every_entry():
    out = io.StringIO()
    print_matrix(_spec(), as_json=True, out=out)
    data = json.loads(out.getvalue())
    assert data["recipe"] == "t/train"
    assert [e["nodes"] for e in data["scales"]] == [[1], [2, 4]]


def test_a_recipe_without_a_matrix_says_every_scale_is_accepted():
    out = io.StringIO()
    assert print_matrix(_spec(""), out=out) == 0
    assert "t/train declares no scale matrix" in out.getvalue()
    assert "every scale is accepted" in out.getvalue()
