"""Pretrain data prep: Megatron bin/idx read back by megatron-core, blend.json, Ray, resume."""

from __future__ import annotations

import hashlib
import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

os.environ.setdefault("RAY_DISABLE_USAGE_STATS", "1")

from nemo_runspec.errors import ExecutionError  # noqa: E402
from nemotron.data_prep.pretrain import run_pretrain  # noqa: E402
from nemotron.data_prep.tokenizer import train_tokenizer  # noqa: E402

ROOT = Path(__file__).resolve().parents[3]
WORDS = ("alpha beta gamma delta shard token model data river stone cloud paper light north "
         "quick brown fox jumps over lazy dog seven eleven merge split write read").split()


def make_docs(n: int, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    return [f"doc {i}: " + " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 80))) for i in range(n)]


@pytest.fixture(scope="module")
def ray_cluster():
    import ray

    ray.init(address="local", num_cpus=2, include_dashboard=False)
    yield
    ray.shutdown()


@pytest.fixture(scope="module")
def tok_dir(tmp_path_factory):
    return train_tokenizer(make_docs(500, seed=1), tmp_path_factory.mktemp("tok") / "tok", vocab_size=400)


def write_corpus(path: Path, docs: list[str], bad_after: dict[int, str] | None = None) -> None:
    with open(path, "w") as f:
        for i, d in enumerate(docs):
            f.write(json.dumps({"text": d}) + "\n")
            if bad_after and i in bad_after:
                f.write(bad_after[i] + "\n")


def tree_hashes(root: Path) -> dict[str, str]:
    return {
        p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file() and ".done" not in p.parts
    }


def cfg_for(corpus: Path, tok: Path, out: Path, **kw) -> dict:
    cfg = {"input": {"paths": [str(corpus)]}, "tokenizer": {"path": str(tok)}, "output_dir": str(out),
           "num_shards": 4, "split": "80,10,10", "max_bad_fraction": 0.5}
    cfg.update(kw)
    return cfg


def test_megatron_reads_back_exact_tokens(tmp_path, tok_dir, ray_cluster):
    from megatron.core.datasets.indexed_dataset import IndexedDataset
    from megatron.core.datasets.utils import get_blend_from_list
    from tokenizers import Tokenizer

    docs = make_docs(300)
    corpus = tmp_path / "c.jsonl"
    # bad lines after docs 10, 20, 30, 40 -> physical lines 12, 23, 34, 45
    bad = {10: "{not json", 20: json.dumps({"body": "x"}), 30: json.dumps({"text": "   "}), 40: json.dumps({"text": 5})}
    write_corpus(corpus, docs, bad)
    out = tmp_path / "out"
    summary = run_pretrain(cfg_for(corpus, tok_dir, out, workers=2))

    tok = Tokenizer.from_file(str(tok_dir / "tokenizer.json"))
    eod = tok.token_to_id("<|endoftext|>")
    expected = [tuple(tok.encode(d, add_special_tokens=False).ids + [eod]) for d in docs]
    blend = json.loads((out / "blend.json").read_text())
    assert set(blend) == {"train", "valid", "test"}
    got_all: list[tuple[int, ...]] = []
    for split in ("train", "valid", "test"):
        prefixes, weights = get_blend_from_list(blend[split])
        assert weights is not None and len(weights) == len(prefixes)
        split_docs = []
        for prefix, weight in zip(prefixes, weights, strict=True):
            ds = IndexedDataset(prefix)
            assert ds.index.dtype.__name__ == "uint16"
            docs_here = [tuple(int(t) for t in ds[i]) for i in range(len(ds))]
            assert weight == sum(len(d) for d in docs_here)  # weights are token counts
            split_docs += docs_here
        # documents keep input order within a split
        positions = [expected.index(d) for d in split_docs]
        assert positions == sorted(positions)
        got_all += split_docs
    assert sorted(got_all) == sorted(expected)
    n_train = len(get_blend_from_list(blend["train"])[0])
    assert n_train == 4
    assert 0.7 < summary["splits"]["train"]["documents"] / len(docs) < 0.9

    report = json.loads((out / "report.json").read_text())
    assert report["records"] == 304
    assert report["bad"]["total"] == 4
    assert report["bad"]["by_reason"] == {"invalid_json": 1, "missing_field": 1, "empty_text": 1, "wrong_type": 1}
    assert [e["line"] for e in report["bad"]["examples"]] == [12, 23, 34, 45]
    assert all(e["file"].endswith("c.jsonl") for e in report["bad"]["examples"])


def test_output_identical_for_1_and_2_workers(tmp_path, tok_dir, ray_cluster):
    corpus = tmp_path / "c.jsonl"
    write_corpus(corpus, make_docs(400, seed=3))
    out = tmp_path / "out"
    run_pretrain(cfg_for(corpus, tok_dir, out, workers=1, num_shards=5))
    h1 = tree_hashes(out)
    import shutil

    shutil.rmtree(out)
    run_pretrain(cfg_for(corpus, tok_dir, out, workers=2, num_shards=5))
    h2 = tree_hashes(out)
    assert len(h1) > 10
    assert h1 == h2


def test_small_input_runs_in_process_with_the_same_bytes_as_ray(tmp_path, tok_dir, ray_cluster, monkeypatch, capsys):
    """Below NEMOTRON_DATA_PREP_IN_PROCESS_BYTES a local run skips Ray (even with workers
    set); above it a local run forks a worker pool, not Ray. Both write the bytes Ray's
    workers write."""
    import ray

    from nemotron.data_prep import runner

    corpus = tmp_path / "c.jsonl"
    write_corpus(corpus, make_docs(400, seed=3))
    out = tmp_path / "out"
    run_pretrain(cfg_for(corpus, tok_dir, out, workers=2, num_shards=5))  # Ray (already running here)
    assert "running in this process" not in capsys.readouterr().out
    with_ray = tree_hashes(out)
    ray.shutdown()
    try:
        import shutil

        shutil.rmtree(out)
        run_pretrain(cfg_for(corpus, tok_dir, out, workers=2, num_shards=5))
        assert "running in this process, without Ray" in capsys.readouterr().out
        assert not ray.is_initialized()
        assert tree_hashes(out) == with_ray and len(with_ray) > 10
        shutil.rmtree(out)
        monkeypatch.setenv("NEMOTRON_DATA_PREP_IN_PROCESS_BYTES", "0")  # never in process: the pool
        run_pretrain(cfg_for(corpus, tok_dir, out, workers=2, num_shards=5))
        assert "2 worker processes on this machine, without Ray" in capsys.readouterr().out
        assert not ray.is_initialized()
        assert tree_hashes(out) == with_ray
        size = corpus.stat().st_size
        monkeypatch.setenv("NEMOTRON_DATA_PREP_IN_PROCESS_BYTES", str(size))  # not below: Ray
        assert not runner.choose_in_process(runner_shards(corpus), None)
        monkeypatch.setenv("NEMOTRON_DATA_PREP_IN_PROCESS_BYTES", str(size + 1))
        assert runner.choose_in_process(runner_shards(corpus), 4)
        monkeypatch.setenv("RAY_ADDRESS", "10.0.0.1:6379")  # inside a Ray job: always Ray
        assert not runner.choose_in_process(runner_shards(corpus), None)
        assert runner.choose_in_process(runner_shards(corpus), 0)
    finally:
        ray.init(address="local", num_cpus=2, include_dashboard=False)  # the module fixture's instance


def runner_shards(corpus: Path):
    from nemotron.data_prep.sharding import plan_shards
    from nemotron.data_prep.sources import scan_input

    return plan_shards([scan_input(str(corpus), "jsonl")], 3, None)


def test_interrupted_run_resumes_without_redoing_shards(tmp_path, tok_dir, ray_cluster):
    corpus = tmp_path / "c.jsonl"
    write_corpus(corpus, make_docs(300, seed=4))
    out = tmp_path / "out"
    done: list[str] = []

    def crash_after_two(shard, result):
        done.append(shard.name)
        if len(done) == 2:
            raise KeyboardInterrupt("simulated crash")

    with pytest.raises(KeyboardInterrupt):
        run_pretrain(cfg_for(corpus, tok_dir, out, workers=1), on_shard_done=crash_after_two)
    assert not (out / "blend.json").exists()
    finished = {p: (p.stat().st_ino, p.stat().st_mtime_ns) for p in out.rglob("shard_*.bin")}
    assert {p.stem for p in finished} == set(done)

    rerun: list[str] = []
    run_pretrain(cfg_for(corpus, tok_dir, out, workers=1), on_shard_done=lambda s, r: rerun.append(s.name))
    assert sorted(rerun) == sorted({"shard_00000", "shard_00001", "shard_00002", "shard_00003"} - set(done))
    for p, stat in finished.items():
        assert (p.stat().st_ino, p.stat().st_mtime_ns) == stat
    resumed = tree_hashes(out)

    import shutil

    shutil.rmtree(out)
    run_pretrain(cfg_for(corpus, tok_dir, out, workers=2))
    assert tree_hashes(out) == resumed


def test_changed_input_invalidates_done_markers(tmp_path, tok_dir):
    corpus = tmp_path / "c.jsonl"
    write_corpus(corpus, make_docs(50, seed=5))
    out = tmp_path / "out"
    run_pretrain(cfg_for(corpus, tok_dir, out, workers=0, num_shards=2))
    write_corpus(corpus, make_docs(60, seed=6))
    redone: list[str] = []
    s = run_pretrain(cfg_for(corpus, tok_dir, out, workers=0, num_shards=2), on_shard_done=lambda sh, r: redone.append(sh.name))
    assert redone == ["shard_00000", "shard_00001"]
    assert s["documents"] == 60


def test_fewer_shards_remove_stale_outputs_and_done_markers(tmp_path, tok_dir):
    corpus = tmp_path / "c.jsonl"
    write_corpus(corpus, make_docs(50, seed=5))
    out = tmp_path / "out"
    run_pretrain(cfg_for(corpus, tok_dir, out, workers=0, num_shards=3))
    assert sorted(p.name for p in (out / ".done").iterdir()) == [f"shard_0000{i}.json" for i in range(3)]
    run_pretrain(cfg_for(corpus, tok_dir, out, workers=0, num_shards=2))
    assert sorted(p.name for p in (out / ".done").iterdir()) == ["shard_00000.json", "shard_00001.json"]
    assert not list(out.glob("*/shard_00002.*"))


def test_max_bad_fraction_fails_after_writing_report(tmp_path, tok_dir):
    corpus = tmp_path / "c.jsonl"
    write_corpus(corpus, make_docs(10), {i: "garbage" for i in range(10)})
    out = tmp_path / "out"
    with pytest.raises(ExecutionError, match="max_bad_fraction"):
        run_pretrain(cfg_for(corpus, tok_dir, out, workers=0, max_bad_fraction=0.1))
    report = json.loads((out / "report.json").read_text())
    assert report["bad"]["by_reason"] == {"invalid_json": 10}


def test_sample_limits_records_and_parquet_input(tmp_path, tok_dir):
    import pyarrow as pa
    import pyarrow.parquet as pq

    docs = make_docs(3000, seed=7)  # > one checkpoint stride and several row batches
    pq.write_table(pa.table({"content": docs}), tmp_path / "a.parquet", row_group_size=700)
    out = tmp_path / "out"
    s = run_pretrain(cfg_for(tmp_path / "*.parquet", tok_dir, out, workers=0, sample=2500,
                             input={"paths": [str(tmp_path / "*.parquet")], "text_field": "content"}))
    assert s["records"] == 2500 and s["documents"] == 2500
    from megatron.core.datasets.indexed_dataset import IndexedDataset
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(tok_dir / "tokenizer.json"))
    blend = json.loads((out / "blend.json").read_text())
    got = []
    for sp in blend.values():
        for prefix in sp or []:
            if not prefix.replace(".", "").isdigit():
                ds = IndexedDataset(prefix)  # keep alive while reading its mmap
                got += [tuple(int(t) for t in ds[i]) for i in range(len(ds))]
    got.sort()
    eod = tok.token_to_id("<|endoftext|>")
    assert got == sorted(tuple(tok.encode(d, add_special_tokens=False).ids + [eod]) for d in docs[:2500])


def test_int32_for_large_vocab(tmp_path):
    from megatron.core.datasets.indexed_dataset import IndexedDataset

    from nemotron.data_prep.indexed_dataset import IndexedDatasetWriter, dtype_for_vocab

    assert dtype_for_vocab(65499) == "uint16" and dtype_for_vocab(65500) == "int32"
    w = IndexedDatasetWriter(tmp_path / "big", "int32")
    w.add_document([70000, 1, 2])
    w.add_document([])
    w.add_document([99999])
    w.finalize()
    ds = IndexedDataset(str(tmp_path / "big"))
    assert [list(map(int, ds[i])) for i in range(3)] == [[70000, 1, 2], [], [99999]]


def test_script_runs_tiny_config_and_reports_bad_config(tmp_path):
    script = ROOT / "src/nemotron/recipes/nano3/stage0_pretrain/data_prep.py"
    tiny = script.parent / "config/data_prep/tiny.yaml"
    env = {**os.environ, "NEMOTRON_HOME": str(tmp_path / "home"), "RAY_DISABLE_USAGE_STATS": "1"}
    out = tmp_path / "out"
    r = subprocess.run([sys.executable, str(script), "--config", str(tiny), "sample=60", "workers=1",
                        f"output_dir={out}", "publish.name=null"],
                       cwd=tmp_path, env=env, capture_output=True, text=True, timeout=180)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "shards 4/4" in r.stdout
    assert json.loads((out / "report.json").read_text())["records"] == 60
    meta = json.loads((out / "metadata.json").read_text())
    assert meta["tokenizer"]["spec"].endswith("sample_data/tokenizer")

    r = subprocess.run([sys.executable, str(script), "--config", str(tiny), "input.paths=[nope/*.jsonl]"],
                       cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 2
    assert r.stderr.startswith("error: ") and "nope/*.jsonl" in r.stderr and "Traceback" not in r.stderr
