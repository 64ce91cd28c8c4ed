"""[[tool.runspec.scales]] read from the runspec: entries kept as written, bad entries one error each naming the line."""

from __future__ import annotations

import pytest

from nemo_runspec import parse_text
from nemo_runspec.errors import RunspecError
from nemo_runspec.spec.parser import collect_errors
from tests.nemo_runspec.scales.test_apply import MATRIX, _script


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


def test_parse_text_keeps_the_entries():
    spec = parse_text('# /// script\n# [tool.runspec]\n# name = "x"\n#\n' + MATRIX + "# ///\n", path="x.py")
    assert [e.nodes for e in spec.scales] == [(1,), (2, 4)]
    assert spec.to_dict()["scales"][1]["exact"] is False
    with pytest.raises(RunspecError):
        parse_text('# /// script\n# [tool.runspec]\n# name = "x"\n# scales = 3\n# ///\n', path="x.py")
