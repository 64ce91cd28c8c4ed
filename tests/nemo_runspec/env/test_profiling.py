"""``[PROFILE.profiling]`` (env/profiling.py): defaults, strict types, and the checks across keys."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from nemo_runspec.env.profiling import ProfilingModel


def test_defaults_capture_steps_10_to_12_on_rank_0():
    m = ProfilingModel()
    assert (m.nsys, m.start_step, m.end_step, m.ranks, m.trace) == (False, 10, 12, [0], "nvtx,cuda")


def test_a_consistent_table_is_kept_as_given():
    m = ProfilingModel(nsys=True, start_step=5, end_step=5, ranks=[0, 8], trace="nvtx,cuda,osrt",
                       output_dir="/lustre/nsys", extra_args=["--sample=none"])
    assert m.ranks == [0, 8] and m.extra_args == ["--sample=none"]


@pytest.mark.parametrize(("kwargs", "words"), [
    ({"start_step": 12, "end_step": 11}, "profiling.end_step (11) is before start_step (12)"),
    ({"ranks": []}, "profiling.ranks must be global ranks"),
    ({"ranks": [0, -1]}, "profiling.ranks must be global ranks"),
    ({"trace": "nvtx cuda"}, "is not a comma-separated list"),
    ({"trace": "nvtx,"}, "is not a comma-separated list"),
    ({"output_dir": "  "}, "profiling.output_dir must be a path"),
    ({"output_dir": "/a\nb"}, "profiling.output_dir must be a path"),
    ({"start_step": "10"}, "Input should be a valid integer"),  # strict: no string for a number
    ({"nsys": True, "sampling": 1}, "Extra inputs are not permitted"),
])
def test_bad_tables_are_refused(kwargs, words):
    with pytest.raises(ValidationError) as e:
        ProfilingModel(**kwargs)
    assert words in str(e.value)
