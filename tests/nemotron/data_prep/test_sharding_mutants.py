"""Sharding and splits (src/nemotron/data_prep/sharding.py, docs/data-prep.md): the exact
rules mutation testing found unstated (docs/dev/mutation.md)."""

from __future__ import annotations

import pytest

from nemo_runspec.errors import ConfigError
from nemotron.data_prep.sharding import (
    RL_SPLITS,
    Shard,
    assign_split,
    hash_unit,
    parse_split,
    plan_shards,
)
from nemotron.data_prep.sources import CHECKPOINT_STRIDE, InputFile, Segment


def _file(url: str, n: int, *, checkpoints: tuple[int, ...] = (), digest: str = "", mtime: str = "m1") -> InputFile:
    return InputFile(url=url, fmt="jsonl", num_records=n, size=10 * n, mtime=mtime,
                     checkpoints=checkpoints, digest=digest)


def _ranges(shards: list[Shard]) -> list[list[tuple[str, int, int]]]:
    return [[(s.url, s.start, s.stop) for s in sh.segments] for sh in shards]


# ------------------------------------------------------------------ plan_shards


def test_shards_are_contiguous_near_equal_and_cross_file_boundaries() -> None:
    shards = plan_shards([_file("a", 4), _file("b", 6)], 3)
    assert _ranges(shards) == [[("a", 0, 3)], [("a", 3, 4), ("b", 0, 2)], [("b", 2, 6)]]
    assert [sh.num_records for sh in shards] == [3, 3, 4]
    assert [sh.index for sh in shards] == [0, 1, 2]
    assert [sh.name for sh in shards] == ["shard_00000", "shard_00001", "shard_00002"]


def test_one_shard_holds_everything() -> None:
    assert _ranges(plan_shards([_file("a", 4), _file("b", 2)], 1)) == [[("a", 0, 4), ("b", 0, 2)]]


def test_fewer_records_than_shards_gives_one_shard_per_record_numbered_densely() -> None:
    shards = plan_shards([_file("a", 2)], 5)
    assert _ranges(shards) == [[("a", 0, 1)], [("a", 1, 2)]]
    assert [sh.index for sh in shards] == [0, 1]


def test_empty_files_add_no_segment() -> None:
    assert _ranges(plan_shards([_file("a", 0), _file("b", 2), _file("c", 0)], 1)) == [[("b", 0, 2)]]


@pytest.mark.parametrize(("sample", "expected"), [(5, 5), (1, 1), (10, 10), (99, 10)])
def test_sample_keeps_the_first_n_records(sample: int, expected: int) -> None:
    shards = plan_shards([_file("a", 4), _file("b", 6)], 2, sample=sample)
    assert sum(sh.num_records for sh in shards) == expected
    assert shards[0].segments[0].start == 0 and shards[0].segments[0].url == "a"


@pytest.mark.parametrize(("num_shards", "sample", "key", "text"), [
    (0, None, "num_shards", "num_shards must be >= 1, got 0"),
    (2, 0, "sample", "sample must be a positive number of records, got 0"),
    (2, -3, "sample", "got -3"),
])
def test_bad_counts_are_config_errors(num_shards: int, sample: int | None, key: str, text: str) -> None:
    with pytest.raises(ConfigError, match=text) as info:
        plan_shards([_file("a", 4)], num_shards, sample=sample)
    assert info.value.key == key


def test_segments_start_at_the_nearest_checkpoint_before_them() -> None:
    n = 3 * CHECKPOINT_STRIDE
    f = _file("a", n, checkpoints=(0, 111, 222), digest="d1")
    shards = plan_shards([f], 3)
    segs = [sh.segments[0] for sh in shards]
    assert [(s.byte_offset, s.skip_from) for s in segs] == [(0, 0), (111, CHECKPOINT_STRIDE),
                                                            (222, 2 * CHECKPOINT_STRIDE)]
    # past the last checkpoint: the last one, never an index out of range
    last = plan_shards([_file("b", 5 * CHECKPOINT_STRIDE, checkpoints=(0, 50))], 5)[-1].segments[0]
    assert (last.byte_offset, last.skip_from) == (50, CHECKPOINT_STRIDE)


def test_a_segment_carries_the_files_identity() -> None:
    seg = plan_shards([_file("a", 3, digest="sha-abc", mtime="t0")], 1)[0].segments[0]
    assert seg == Segment(url="a", fmt="jsonl", start=0, stop=3, byte_offset=0, skip_from=0, size=30,
                          digest="sha-abc")
    # no content hash: the mtime stands in for it
    assert plan_shards([_file("a", 3, mtime="t0")], 1)[0].segments[0].digest == "t0"


# ------------------------------------------------------------------ fingerprints


def test_fingerprint_covers_segments_and_visible_params_only() -> None:
    shard = plan_shards([_file("a", 4, digest="d")], 1)[0]
    base = shard.fingerprint({"seq": 8, "_tokenizer": b"x" * 10})
    assert len(base) == 64
    assert shard.fingerprint({"seq": 8, "_tokenizer": b"other"}) == base   # bulky payload left out
    assert shard.fingerprint({"seq": 9, "_tokenizer": b"x"}) != base      # a visible parameter counts
    changed = plan_shards([_file("a", 4, digest="d2")], 1)[0]
    assert changed.fingerprint({"seq": 8}) != shard.fingerprint({"seq": 8})  # a changed file counts


# ------------------------------------------------------------------ splits


@pytest.mark.parametrize(("spec", "expected"), [
    ("98,1,1", {"train": 0.98, "valid": 0.01, "test": 0.01}),
    ("1/1/2", {"train": 0.25, "valid": 0.25, "test": 0.5}),
    ([3, 1], {"train": 0.75, "valid": 0.25, "test": 0.0}),
    ("5", {"train": 1.0, "valid": 0.0, "test": 0.0}),
    ((0, 2, 0), {"train": 0.0, "valid": 1.0, "test": 0.0}),
])
def test_parse_split_normalises(spec, expected: dict[str, float]) -> None:
    got = parse_split(spec)
    assert list(got) == ["train", "valid", "test"]
    assert got == pytest.approx(expected)


def test_parse_split_with_other_names() -> None:
    assert parse_split("9,1", RL_SPLITS) == pytest.approx({"train": 0.9, "validation": 0.1})
    with pytest.raises(ConfigError, match="needs 1-2 non-negative weights") as info:
        parse_split("1,1,1", RL_SPLITS)
    assert "train, validation" in (info.value.hint or "")


@pytest.mark.parametrize("spec", ["1,2,3,4", "1,-1,1", "0,0,0", "0"])
def test_parse_split_refuses_bad_weights(spec: str) -> None:
    with pytest.raises(ConfigError, match="needs 1-3 non-negative weights with a positive sum") as info:
        parse_split(spec)
    assert info.value.key == "split"


def test_parse_split_refuses_text() -> None:
    with pytest.raises(ConfigError, match="is not a list of numbers") as info:
        parse_split("a,b")
    assert info.value.key == "split" and "98,1,1" in (info.value.hint or "")


def test_hash_unit_is_deterministic_uniform_and_seeded() -> None:
    assert hash_unit("abc", 1) == hash_unit(b"abc", 1)
    assert hash_unit("abc", 1) != hash_unit("abc", 2)
    assert hash_unit("abc", "1") == hash_unit("abc", 1)
    values = [hash_unit(f"k{i}") for i in range(2000)]
    assert all(0.0 <= v < 1.0 for v in values)
    assert 0.45 < sum(values) / len(values) < 0.55
    assert sum(v < 0.25 for v in values) / len(values) == pytest.approx(0.25, abs=0.04)


def test_assign_split_follows_the_fractions_by_hash() -> None:
    fr = parse_split("50,30,20")
    keys = [f"record-{i}" for i in range(3000)]
    got = [assign_split(k, fr, seed=7) for k in keys]
    share = {n: got.count(n) / len(got) for n in fr}
    assert share == pytest.approx({"train": 0.5, "valid": 0.3, "test": 0.2}, abs=0.04)
    for k, name in zip(keys, got, strict=True):  # the bucket is the hash's interval
        u = hash_unit(k, 7)
        assert name == ("train" if u < 0.5 else "valid" if u < 0.8 else "test")
    assert [assign_split(k, fr, seed=7) for k in keys] == got  # duplicates share a split


def test_assign_split_skips_empty_splits_and_never_falls_off_the_end() -> None:
    fr = {"train": 0.0, "valid": 1.0, "test": 0.0}
    assert {assign_split(f"k{i}", fr) for i in range(200)} == {"valid"}
    # rounding can leave the fractions summing just below 1: the last non-empty split takes the rest
    almost = {"train": 0.0, "valid": 0.0, "test": 1e-12}
    assert {assign_split(f"k{i}", almost) for i in range(50)} == {"test"}


def test_fingerprint_is_stable_across_runs_and_param_order() -> None:
    """Outputs record it: an earlier run's shards must be recognised (a pinned value)."""
    from pathlib import Path

    shard = plan_shards([_file("a", 4, digest="d")], 1)[0]
    assert shard.fingerprint({"seq": 8, "b": "x"}) == (
        "c2e90906ce7fb6e5952a12c904bdf75428366a7d0d0e8ae90b37c858268a7778")
    assert shard.fingerprint({"b": "x", "seq": 8}) == shard.fingerprint({"seq": 8, "b": "x"})
    assert shard.fingerprint({"p": Path("/x")}) == shard.fingerprint({"p": "/x"})  # any value, as text


def test_seeds_default_to_0_and_may_be_long_text() -> None:
    assert hash_unit("k") == hash_unit("k", 0)
    fr = parse_split("50,50")
    assert [assign_split(f"k{i}", fr) for i in range(50)] == [assign_split(f"k{i}", fr, 0) for i in range(50)]
    assert 0.0 <= hash_unit("k", "s" * 100) < 1.0  # only the first 64 bytes key the hash
    assert hash_unit("k", "s" * 64 + "a") == hash_unit("k", "s" * 64 + "b")


def test_keys_with_lone_surrogates_hash() -> None:
    """Text read with surrogateescape may hold lone surrogates: hashed, not an error."""
    assert hash_unit("\udc80x") != hash_unit("x")
    assert 0.0 <= hash_unit("\udc80x") < 1.0


def test_a_split_with_weight_0_is_never_chosen_even_for_the_rest() -> None:
    fr = {"train": 1e-12, "valid": 0.0}  # fractions that do not reach 1: the rest goes to train
    assert {assign_split(f"k{i}", fr) for i in range(50)} == {"train"}


def test_no_positive_fraction_is_a_programming_error() -> None:
    with pytest.raises(AssertionError):
        assign_split("k", {"train": 0.0, "valid": 0.0})


def test_files_without_checkpoints_start_every_segment_at_byte_0() -> None:
    shards = plan_shards([_file("a", 10)], 3)
    assert [(s.segments[0].start, s.segments[0].byte_offset, s.segments[0].skip_from) for s in shards] == [
        (0, 0, 0), (3, 0, 0), (6, 0, 0)]


def test_parse_split_hint_is_an_example() -> None:
    with pytest.raises(ConfigError) as info:
        parse_split("x")
    assert info.value.hint == 'e.g. split: "98,1,1"'
