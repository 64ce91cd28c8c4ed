"""SFT data prep: chat template, assistant-only loss mask, packing, bad records, Ray determinism,
and the Megatron-Bridge packed files read back with numpy and with the pinned wheel's own reader."""

from __future__ import annotations

import hashlib
import json
import os
import random
import shutil
from collections import defaultdict
from pathlib import Path
from types import SimpleNamespace

import pytest

os.environ.setdefault("RAY_DISABLE_USAGE_STATS", "1")

from nemotron.data_prep.sft import pack, read_packed, run_sft  # noqa: E402
from nemotron.data_prep.tokenizer import train_tokenizer  # noqa: E402
from tests.nemotron.megatron_bridge_wheel import reader_modules  # noqa: E402

WORDS = "how why what data token model answer question python list dict file open read write loop".split()


def convs(n: int, seed: int = 0) -> list[dict]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        msgs = []
        if i % 3 == 0:
            msgs.append({"role": "system", "content": f"system note {i}"})
        for t in range(rng.randint(1, 3)):
            msgs.append({"role": "user", "content": f"Q{i}.{t} " + " ".join(rng.choice(WORDS) for _ in range(rng.randint(2, 15)))})
            msgs.append({"role": "assistant", "content": f"A{i}.{t} " + " ".join(rng.choice(WORDS) for _ in range(rng.randint(2, 25)))})
        out.append({"messages": msgs})
    return out


@pytest.fixture(scope="module")
def tok_dir(tmp_path_factory):
    texts = [m["content"] for c in convs(300, seed=9) for m in c["messages"]]
    return train_tokenizer(texts, tmp_path_factory.mktemp("tok") / "tok", vocab_size=500)


def write(path: Path, records: list, extra: dict[int, str] | None = None) -> None:
    with open(path, "w") as f:
        for i, r in enumerate(records):
            f.write(json.dumps(r) + "\n")
            if extra and i in extra:
                f.write(extra[i] + "\n")


def cfg_for(corpus: Path, tok: Path, out: Path, **kw) -> dict:
    cfg = {"input": {"paths": [str(corpus)]}, "tokenizer": {"path": str(tok)}, "output_dir": str(out),
           "num_shards": 3, "pack_size": 256, "split": "80,10,10", "max_bad_fraction": 0.5, "workers": 0}
    cfg.update(kw)
    return cfg


def test_packed_sequences_mask_only_assistant_tokens(tmp_path, tok_dir):
    from tokenizers import Tokenizer

    data = convs(120)
    corpus = tmp_path / "c.jsonl"
    write(corpus, data)
    out = tmp_path / "out"
    run_sft(cfg_for(corpus, tok_dir, out))
    tok = Tokenizer.from_file(str(tok_dir / "tokenizer.json"))
    by_first_user = {next(m["content"] for m in c["messages"] if m["role"] == "user"): c for c in data}
    seen = 0
    for f in sorted(out.glob("*/shard_*.parquet")):
        for row in read_packed(f):
            ids, mask, starts, n = row["input_ids"], row["loss_mask"], row["seq_start_ids"], row["num_tokens"]
            assert len(ids) == len(mask) == 256 and n <= 256
            assert not any(mask[n:])  # padding never trains
            bounds = [*starts, n]
            for a, b in zip(bounds, bounds[1:], strict=False):
                text = tok.decode(ids[a:b], skip_special_tokens=False)
                assert text.startswith("<|im_start|>")
                user = text.split("<|im_start|>user\n", 1)[1].split("<|im_end|>", 1)[0]
                conv = by_first_user[user]
                # ChatML: the trained part is each assistant content plus its end-of-turn marker
                want = "".join(m["content"] + "<|im_end|>\n" for m in conv["messages"] if m["role"] == "assistant")
                masked = [t for t, m in zip(ids[a:b], mask[a:b], strict=True) if m]
                assert tok.decode(masked, skip_special_tokens=False) == want
                unmasked = tok.decode([t for t, m in zip(ids[a:b], mask[a:b], strict=True) if not m],
                                      skip_special_tokens=False)
                assert all(m["content"] not in unmasked for m in conv["messages"] if m["role"] == "assistant")
                seen += 1
    assert seen == 120
    meta = json.loads((out / "metadata.json").read_text())
    assert sum(s["conversations"] for s in meta["splits"].values()) == 120


def test_bad_conversations_are_reported(tmp_path, tok_dir):
    data = convs(20)
    long_conv = {"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": " ".join(["word"] * 400)}]}
    extra = {
        2: json.dumps({"messages": [{"role": "user", "content": "no answer here"}]}),
        5: "{broken",
        8: json.dumps(long_conv),
        11: json.dumps({"messages": [{"role": "user", "content": 3}]}),
        12: json.dumps({"text": "not a chat"}),
    }
    corpus = tmp_path / "c.jsonl"
    write(corpus, data, extra)
    out = tmp_path / "out"
    s = run_sft(cfg_for(corpus, tok_dir, out))
    rep = json.loads((out / "report.json").read_text())
    assert rep["bad"]["by_reason"] == {"no_assistant_turn": 1, "invalid_json": 1, "too_long": 1,
                                       "wrong_type": 1, "missing_field": 1}
    assert [e["line"] for e in rep["bad"]["examples"]] == [4, 8, 12, 16, 18]
    assert s["conversations"] == 20

    shutil.rmtree(out)
    s = run_sft(cfg_for(corpus, tok_dir, out, too_long="truncate"))
    assert s["conversations"] == 21
    assert json.loads((out / "metadata.json").read_text())["truncated"] == 1


def test_pack_never_overflows_or_splits():
    rng = random.Random(0)
    lengths = [rng.randint(1, 100) for _ in range(500)]
    for method in ("first_fit", "sequential"):
        packs = pack(lengths, 128, method)
        assert sorted(i for p in packs for i in p) == list(range(500))
        assert all(sum(lengths[i] for i in p) <= 128 for p in packs)
        assert all(p == sorted(p) for p in packs)
    seq = pack(lengths, 128, "sequential")
    assert [i for p in seq for i in p] == list(range(500))
    assert len(pack(lengths, 128, "first_fit")) <= len(seq)


@pytest.mark.slow
def test_sft_output_identical_for_1_and_2_ray_workers(tmp_path, tok_dir, monkeypatch, capsys):
    import ray

    corpus = tmp_path / "c.jsonl"
    write(corpus, convs(90, seed=2))
    out = tmp_path / "out"

    def hashes():
        return {p.relative_to(out).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
                for p in sorted(out.rglob("*")) if p.is_file() and ".done" not in p.parts}

    ray.init(address="local", num_cpus=2, include_dashboard=False)
    try:
        run_sft(cfg_for(corpus, tok_dir, out, workers=1, num_shards=4))
        h1 = hashes()
        shutil.rmtree(out)
        run_sft(cfg_for(corpus, tok_dir, out, workers=2, num_shards=4))
        assert hashes() == h1 and len(h1) >= 8
    finally:
        ray.shutdown()
    # without Ray: the local worker pool, and in process
    shutil.rmtree(out)
    monkeypatch.setenv("NEMOTRON_DATA_PREP_IN_PROCESS_BYTES", "0")
    run_sft(cfg_for(corpus, tok_dir, out, workers=2, num_shards=4))
    assert "2 worker processes on this machine" in capsys.readouterr().out
    assert hashes() == h1
    shutil.rmtree(out)
    run_sft(cfg_for(corpus, tok_dir, out, workers=0, num_shards=4))
    assert hashes() == h1


# --- the Megatron-Bridge packed files (packed/*.npy) ---------------------------------------------

NPY = {"train": "train.npy", "valid": "validation.npy", "test": "test.npy"}


def spans(bounds):
    """(start, end) of each conversation from boundaries [s_0, ..., s_k, end]."""
    return zip(bounds[:-1], bounds[1:], strict=True)


def chatml_expectations(tok, data):
    """Per conversation (keyed by its first user turn): the text the loss must cover under ChatML."""
    want = {}
    for c in data:
        first_user = next(m["content"] for m in c["messages"] if m["role"] == "user")
        want[first_user] = "".join(m["content"] + "<|im_end|>\n" for m in c["messages"] if m["role"] == "assistant")
    return want


def first_user(tok, ids) -> str:
    text = tok.decode(ids, skip_special_tokens=False)
    assert text.startswith("<|im_start|>")
    return text.split("<|im_start|>user\n", 1)[1].split("<|im_end|>", 1)[0]


@pytest.fixture(scope="module")
def sft_out(tmp_path_factory, tok_dir):
    """120 conversations (3 shards, pack_size 256) prepared once; the inputs and the output dir."""
    from tokenizers import Tokenizer

    root = tmp_path_factory.mktemp("sft")
    data = convs(120, seed=5)
    write(root / "c.jsonl", data)
    run_sft(cfg_for(root / "c.jsonl", tok_dir, root / "out"))
    tok = Tokenizer.from_file(str(tok_dir / "tokenizer.json"))
    return root / "out", data, tok


def test_packed_npy_read_back_as_megatron_bridge_loads_it(sft_out):
    """np.load(allow_pickle=True) + seq_boundaries, as GPTSFTPackedDataset does; mask checked against the template."""
    import numpy as np

    out, data, tok = sft_out
    meta = json.loads((out / "metadata.json").read_text())
    want = chatml_expectations(tok, data)
    assert meta["packed"]["files"] == {s: f"packed/{n}" for s, n in NPY.items()}
    seen = 0
    for split, name in NPY.items():
        items = np.load(out / "packed" / name, allow_pickle=True)
        rows = [r for f in meta["files"][split] for r in read_packed(out / f)]  # the Parquet packs, shard order
        assert items.dtype == object and len(items) == len(rows) == meta["splits"][split]["packs"]
        trained = 0
        for item, row in zip(items, rows, strict=True):
            assert list(item) == ["input_ids", "loss_mask", "seq_start_id"]
            # plain lists: Megatron-Bridge builds seq_boundaries with `seq_start_id + [len(input_ids)]`
            assert all(type(item[k]) is list for k in item)
            ids, mask = item["input_ids"], item["loss_mask"]
            seq_boundaries = item["seq_start_id"] + [len(ids)]
            assert len(mask) == len(ids) == row["num_tokens"] and ids == row["input_ids"][: len(ids)]
            assert seq_boundaries[0] == 0 and seq_boundaries == sorted(set(seq_boundaries))
            # what Megatron-Bridge trains on: inputs [a, b-1), labels [a+1, b) per conversation
            assert sum(b - a - 1 for a, b in spans(seq_boundaries)) <= 256
            for a, b in spans(seq_boundaries):
                labels = ids[a + 1 : b]
                label_mask = mask[a : b - 1]
                assert mask[b - 1] == 0  # a conversation's last token predicts nothing
                assert label_mask == row["loss_mask"][a + 1 : b]  # shifted by one within the conversation
                text = tok.decode([t for t, m in zip(labels, label_mask, strict=True) if m], skip_special_tokens=False)
                assert text == want[first_user(tok, ids[a:b])]
                trained += sum(label_mask)
                seen += 1
        assert trained == meta["splits"][split]["loss_tokens"]  # no trained token lost by the shift
    assert seen == 120


def test_packing_metadata_matches_the_packs(sft_out):
    import numpy as np

    out, _, _ = sft_out
    entries = json.loads((out / "packed" / "packing_metadata.json").read_text())
    meta = json.loads((out / "metadata.json").read_text())
    splits = [s for s in ("train", "valid") if meta["splits"][s]["packs"]]
    assert len(entries) == len(splits) == 2
    for split, entry in zip(splits, entries, strict=True):
        items = np.load(out / "packed" / NPY[split], allow_pickle=True)
        lengths = [[b - a - 1 for a, b in spans(bounds)]
                   for bounds in (it["seq_start_id"] + [len(it["input_ids"])] for it in items)]
        packed = [sum(x) for x in lengths]
        assert entry == {
            "dataset_max_seqlen": max(max(x) for x in lengths),
            "max_samples_per_bin": max(len(x) for x in lengths),
            "packing_factor": round(sum(len(x) for x in lengths) / len(items), 2),
            "packing_efficiency": round(sum(packed) / len(items) / 256 * 100, 2),
            "pack_size": 256,
            "min_packed_seqlen": min(packed),
        }
    assert meta["packed_sequence_specs"] == {
        "packed_sequence_size": 256, "packed_train_data_path": "packed/train.npy",
        "packed_val_data_path": "packed/validation.npy", "packed_metadata_path": "packed/packing_metadata.json"}


def test_loss_mask_shift_is_the_one_megatron_bridge_applies(sft_out):
    """The wheel's own fill_packing_strategy, fed each conversation with its token-level mask,
    produces exactly our label-aligned mask."""
    import numpy as np

    out, _, _ = sft_out
    meta = json.loads((out / "metadata.json").read_text())
    items = np.load(out / "packed" / "train.npy", allow_pickle=True)
    rows = [r for f in meta["files"]["train"] for r in read_packed(out / f)]
    with reader_modules() as mb:
        for item, row in list(zip(items, rows, strict=True))[:10]:
            bounds = row["seq_start_ids"] + [row["num_tokens"]]
            theirs = []
            for a, b in spans(bounds):
                conv = {"input_ids": row["input_ids"][a:b], "loss_mask": row["loss_mask"][a:b]}
                by_length = defaultdict(list, {b - a - 1: [conv]})  # what create_hist hands it
                (one,) = mb.fill_packing_strategy([[b - a - 1]], by_length, b - a, pad_id=0)
                assert one["input_ids"] == conv["input_ids"] and one["seq_start_id"] == [0]
                theirs += [int(m) for m in one["loss_mask"]]
            assert item["loss_mask"] == theirs


@pytest.mark.parametrize(("pad_cu_seqlens", "eos_token"), [(False, "<|endoftext|>"), (True, "<|im_end|>")])
def test_megatron_bridge_finetune_dataset_reads_the_output(sft_out, pad_cu_seqlens, eos_token):
    """The wheel's FinetuningDatasetBuilder (what finetune builds its datasets with) and
    GPTSFTPackedDataset.collate_fn, pointed at our files through PackedSequenceSpecs."""
    out, data, tok = sft_out
    meta = json.loads((out / "metadata.json").read_text())
    specs = {k: v if k == "packed_sequence_size" else str(out / v) for k, v in meta["packed_sequence_specs"].items()}
    want = chatml_expectations(tok, data)
    turns = {k: v.count("<|im_end|>") for k, v in want.items()}
    eos_in_text = eos_token == "<|im_end|>"
    if eos_in_text:
        # collate zeroes the loss wherever the *input* token is eos: with <|im_end|> as eos the
        # newline after each assistant turn is not trained (Megatron-Bridge's rule, not our mask)
        want = {k: v.replace("<|im_end|>\n", "<|im_end|>") for k, v in want.items()}
    with reader_modules() as mb:
        spec = mb.PackedSequenceSpecs(**specs, pad_cu_seqlens=pad_cu_seqlens)
        builder = mb.FinetuningDatasetBuilder(
            dataset_root=out, tokenizer=SimpleNamespace(eos_id=tok.token_to_id(eos_token)), seq_length=256,
            packed_sequence_specs=spec, do_test=False, dataset_kwargs={"pad_to_max_length": True})
        train, valid, test = builder.build()
        assert isinstance(train, mb.GPTSFTPackedDataset) and isinstance(valid, mb.GPTSFTPackedDataset)
        assert test is None and not list(out.glob("*.jsonl"))  # nothing re-packed from raw files
        seen = 0
        for split, ds in (("train", train), ("valid", valid)):
            assert len(ds) == meta["splits"][split]["packs"]
            trained = expected = 0
            for i in range(len(ds)):
                item = ds[i]
                batch = ds.collate_fn([item])
                tokens, labels = batch["tokens"][0].tolist(), batch["labels"][0].tolist()
                mask = batch["loss_mask"][0].tolist()
                assert len(tokens) == 256  # pad_to_max_length: the pack size
                cu = [c for c in batch["cu_seqlens"][0].tolist() if c >= 0]
                n_conv = len(item["seq_boundaries"]) - 1
                for a, b in spans(cu[: n_conv + 1]):
                    key = first_user(tok, tokens[a:b] + labels[b - 1 : b])
                    text = tok.decode([t for t, m in zip(labels[a:b], mask[a:b], strict=True) if m],
                                      skip_special_tokens=False)
                    assert text == want[key]
                    expected += turns[key] if eos_in_text else 0
                    seen += 1
                assert not any(mask[cu[n_conv] :])  # padding never trains
                trained += sum(mask)
            assert trained == meta["splits"][split]["loss_tokens"] - expected
    assert seen == meta["splits"]["train"]["conversations"] + meta["splits"]["valid"]["conversations"]


def test_interrupted_sft_run_resumes_and_writes_the_same_files(tmp_path, tok_dir):
    corpus = tmp_path / "c.jsonl"
    write(corpus, convs(90, seed=3))
    out = tmp_path / "out"

    def crash_after_one(shard, result):
        raise KeyboardInterrupt("simulated crash")

    with pytest.raises(KeyboardInterrupt):
        run_sft(cfg_for(corpus, tok_dir, out, num_shards=3), on_shard_done=crash_after_one)
    assert not (out / "packed").exists() and not (out / "metadata.json").exists()
    rerun: list[str] = []
    run_sft(cfg_for(corpus, tok_dir, out, num_shards=3), on_shard_done=lambda s, r: rerun.append(s.name))
    assert rerun == ["shard_00001", "shard_00002"]
    resumed = tree_hashes(out)
    rerun.clear()
    run_sft(cfg_for(corpus, tok_dir, out, num_shards=3), on_shard_done=lambda s, r: rerun.append(s.name))
    assert rerun == [] and tree_hashes(out) == resumed  # all resumed: packed files rebuilt identically
    shutil.rmtree(out)
    run_sft(cfg_for(corpus, tok_dir, out, num_shards=3))
    assert tree_hashes(out) == resumed and "packed/train.npy" in resumed


def tree_hashes(out: Path) -> dict[str, str]:
    return {p.relative_to(out).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(out.rglob("*")) if p.is_file() and ".done" not in p.parts}


def test_cpu_fallback_reads_the_packed_files_with_the_token_level_loss(sft_out):
    """nemotron.training.data.load_packs (the CPU fallback) reads packed/*.npy; its batches train
    exactly the targets the Parquet mask marks, within one conversation."""
    import numpy as np

    from nemotron.training.data import load_packs, segment_ids_for

    out, _, _ = sft_out
    meta = json.loads((out / "metadata.json").read_text())
    for split in ("train", "valid"):
        packs = load_packs(out, split)
        rows = [r for f in meta["files"][split] for r in read_packed(out / f)]
        assert len(packs) == len(rows) and packs.input_ids.shape[1] == 256
        batch = packs.batch(list(range(len(rows))), seq_length=255)
        ids = np.array([r["input_ids"] for r in rows])
        seg = np.stack([segment_ids_for(r["seq_start_ids"], r["num_tokens"], 256) for r in rows])
        target_mask = np.array([r["loss_mask"] for r in rows])[:, 1:]
        assert (batch["tokens"] == ids[:, :-1]).all() and (batch["targets"] == ids[:, 1:]).all()
        assert (batch["segment_ids"] == seg[:, :-1]).all()
        assert (batch["loss_mask"] == target_mask * (seg[:, 1:] == seg[:, :-1])).all()
        assert batch["loss_mask"].sum() == meta["splits"][split]["loss_tokens"]
    assert load_packs(out, "test") is not None
