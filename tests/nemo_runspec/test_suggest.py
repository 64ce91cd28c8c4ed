"""'Did you mean ...?' hints (_suggest): the closest name, the valid choices when asked or when
nothing is close, a bounded list, and the stricter one-edit test for short names."""

from __future__ import annotations

from nemo_runspec._suggest import LISTED, closest, did_you_mean, one_edit_away


def test_closest_is_the_nearest_name_or_a_case_only_match_or_none():
    assert closest("pretrian", ["pretrain", "sft", "rl"]) == "pretrain"
    assert closest("SFT", ["pretrain", "sft"]) == "sft"
    assert closest("zzzz", ["pretrain", "sft"]) is None
    assert closest("x" * 10_000, ["x" * 200]) == "x" * 200  # a huge word is cut, not quadratic


def test_did_you_mean_names_the_best_and_lists_when_asked():
    assert did_you_mean("slrum", ["slurm", "local", "docker"]) == "did you mean 'slurm'?"
    assert did_you_mean("slrum", ["slurm", "local"], listing=True) == "did you mean 'slurm'?; valid: local, slurm"
    assert did_you_mean("nothing-like-it", ["slurm", "local"]) == "valid: local, slurm"
    assert did_you_mean("x", []) is None


def test_a_long_list_of_choices_is_cut_with_a_count():
    pool = [f"name{i:03d}" for i in range(LISTED + 5)]
    hint = did_you_mean("qqqqqqqq", pool)
    assert hint.endswith("... (5 more)")
    assert hint.count("name") == LISTED


def test_one_edit_away_changed_added_dropped_or_swapped():
    names = ["range", "choice", "glob"]
    assert one_edit_away("rnage", names) == "range"   # neighbours swapped
    assert one_edit_away("rangee", names) == "range"  # a letter added
    assert one_edit_away("rang", names) == "range"    # a letter dropped
    assert one_edit_away("ranxe", names) == "range"   # a letter changed
    assert one_edit_away("glob", names) == "glob"
    assert one_edit_away("rxnxe", names) is None      # two changes
    assert one_edit_away("renga", names) is None      # a swap of letters apart
