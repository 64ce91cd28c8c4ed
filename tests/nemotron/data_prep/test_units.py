"""Units of the data-prep runtime: sharding, splits, sources, config loading, publishing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nemo_runspec.errors import ConfigError
from nemotron.data_prep.cli import load_config
from nemotron.data_prep.paths import resolve_path
from nemotron.data_prep.publish import publish_output
from nemotron.data_prep.sharding import assign_split, parse_split, plan_shards
from nemotron.data_prep.sources import InputFile, iter_segment, scan_input
from nemotron.data_prep.tokenizer import DEFAULT_CHAT_TEMPLATE, load_tokenizer, render_chat


@given(st.lists(st.integers(0, 50), min_size=1, max_size=6), st.integers(1, 12), st.one_of(st.none(), st.integers(1, 200)))
@settings(max_examples=60, deadline=None)
def test_plan_shards_covers_each_record_once(sizes, num_shards, sample):
    files = [InputFile(url=f"f{i}", fmt="jsonl", num_records=n, size=0, mtime="", checkpoints=(0,)) for i, n in enumerate(sizes)]
    shards = plan_shards(files, num_shards, sample)
    covered = [(seg.url, r) for s in shards for seg in s.segments for r in range(seg.start, seg.stop)]
    want = [(f"f{i}", r) for i, n in enumerate(sizes) for r in range(n)]
    want = want[: sample] if sample is not None else want
    assert covered == want
    assert len(shards) <= num_shards
    assert [s.index for s in shards] == list(range(len(shards)))


def test_segments_seek_past_checkpoints(tmp_path):
    p = tmp_path / "big.jsonl"
    p.write_text("".join(json.dumps({"i": i}) + "\n" for i in range(5000)))
    f = scan_input(str(p))
    assert f.num_records == 5000 and len(f.checkpoints) == 5
    shards = plan_shards([f], 3)
    got = [(line, rec["i"]) for s in shards for seg in s.segments for line, rec in iter_segment(seg)]
    assert got == [(i + 1, i) for i in range(5000)]


def test_parse_split_and_assignment():
    assert parse_split("98,1,1") == pytest.approx({"train": 0.98, "valid": 0.01, "test": 0.01})
    assert parse_split("1") == {"train": 1.0, "valid": 0.0, "test": 0.0}
    for bad in ("a,b", "1,2,3,4", "0,0,0", "-1,2"):
        with pytest.raises(ConfigError):
            parse_split(bad)
    fr = parse_split("50,50,0")
    picks = [assign_split(f"doc {i}", fr, 7) for i in range(2000)]
    assert "test" not in picks and 900 < picks.count("train") < 1100
    assert picks == [assign_split(f"doc {i}", fr, 7) for i in range(2000)]
    assert picks != [assign_split(f"doc {i}", fr, 8) for i in range(2000)]


def test_pkg_paths_resolve_inside_package(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    root = resolve_path("pkg:nemotron/recipes/nano3/sample_data")
    assert Path(root, "tokenizer", "tokenizer.json").is_file()
    assert resolve_path("tokenizer", "pkg:nemotron/recipes/nano3/sample_data") == str(Path(root, "tokenizer"))
    assert resolve_path("x.jsonl") == str(tmp_path / "x.jsonl")
    assert resolve_path("s3://b/k.jsonl", "/base") == "s3://b/k.jsonl"


def test_shipped_tokenizer_and_template():
    tok = load_tokenizer("pkg:nemotron/recipes/nano3/sample_data/tokenizer")
    assert 3000 < tok.vocab_size <= 4200
    for special in ("<|endoftext|>", "<|im_start|>", "<|im_end|>"):
        assert tok.token_id(special) is not None
    assert tok.eod_id() == tok.token_id("<|endoftext|>")
    msgs = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]
    text = render_chat(tok.chat_template, msgs)
    assert text == "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\nyo<|im_end|>\n"
    assert render_chat(DEFAULT_CHAT_TEMPLATE, msgs[:1], add_generation_prompt=True).endswith("<|im_start|>assistant\n")
    with pytest.raises(ConfigError, match="not found"):
        load_tokenizer("./missing-dir")


def test_load_config_defaults_chain_and_overrides(tmp_path):
    (tmp_path / "default.yaml").write_text("a: 1\nb: {c: 2, d: 3}\nrun: {x: 1}\n")
    (tmp_path / "tiny.yaml").write_text("defaults:\n  - default\nb: {c: 20}\n")
    cfg = load_config(tmp_path / "tiny.yaml", ["b.d=30", "+sample=5"])
    assert cfg.a == 1 and cfg.b.c == 20 and cfg.b.d == 30 and cfg.sample == 5
    # one grammar with the CLI: a key the config does not have is a typo until added with +
    with pytest.raises(ConfigError, match="unknown key 'sample'.*use '\\+sample=5'"):
        load_config(tmp_path / "tiny.yaml", ["sample=5"])
    with pytest.raises(ConfigError, match="did you mean 'b.d'"):
        load_config(tmp_path / "tiny.yaml", ["b.dd=1"])
    with pytest.raises(ConfigError, match="unexpected argument"):
        load_config(tmp_path / "tiny.yaml", ["--bogus"])
    with pytest.raises(ConfigError, match="not found"):
        load_config(tmp_path / "nope.yaml")


def test_shipped_configs_load():
    root = Path(__file__).resolve().parents[3] / "src/nemotron/recipes/nano3"
    for stage in ("stage0_pretrain", "stage1_sft", "stage2_rl"):
        for name in ("default", "tiny"):
            cfg = load_config(root / stage / "config/data_prep" / f"{name}.yaml")
            assert cfg.input.paths and "num_shards" in cfg
        tiny = load_config(root / stage / "config/data_prep/tiny.yaml")
        assert tiny.data_root.startswith("pkg:") and tiny.publish.name


def test_publish_output_noop_without_name(tmp_path, capsys):
    assert publish_output({"publish": {"name": None}}, tmp_path, {}) is None
    assert publish_output({}, tmp_path, {}) is None
    assert capsys.readouterr().out == ""
