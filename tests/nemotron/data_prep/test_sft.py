"""SFT data prep: chat template, assistant-only loss mask, packing, bad records, Ray determinism."""

from __future__ import annotations

import hashlib
import json
import os
import random
import shutil
from pathlib import Path

import pytest

os.environ.setdefault("RAY_DISABLE_USAGE_STATS", "1")

from nemotron.data_prep.sft import pack, read_packed, run_sft  # noqa: E402
from nemotron.data_prep.tokenizer import train_tokenizer  # noqa: E402

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
def test_sft_output_identical_for_1_and_2_ray_workers(tmp_path, tok_dir):
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
