#!/usr/bin/env python3
"""Benchmark pretrain tokenization throughput (tokens/s per core).

Generates a >= 50 MB JSONL corpus (paragraphs of the shipped sample corpus,
shuffled) in a temp dir and measures, with the shipped sample tokenizer:

1. a plain single-process loop calling ``Tokenizer.encode`` one document at a time,
2. single-process ``encode_batch`` and ``encode_batch_fast`` loops (rayon pinned to one
   thread; the data prep uses ``encode_batch_fast``: same ids, no character offsets),
3. the real data prep (``run_pretrain``: Ray tasks, bin/idx writing) with 1 and 2 workers.

Prints a table and writes bench/results/tokenize.json.
Usage: ``.venv/bin/python bench/bench_tokenize.py [--mb 50]``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import sys
import tempfile
import time
from pathlib import Path

os.environ["RAYON_NUM_THREADS"] = "1"  # one core per process, before tokenizers loads
os.environ.setdefault("RAY_DISABLE_USAGE_STATS", "1")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from nemotron.data_prep.pretrain import run_pretrain  # noqa: E402
from nemotron.data_prep.tokenizer import load_tokenizer  # noqa: E402

SAMPLE = ROOT / "src/nemotron/recipes/nano3/sample_data"


def make_corpus(path: Path, megabytes: int, seed: int = 0) -> int:
    """Write a JSONL corpus of at least ``megabytes`` MB; return the number of documents."""
    paras = []
    for line in (SAMPLE / "pretrain/docs.jsonl").read_text().splitlines():
        paras += [p for p in json.loads(line)["text"].split("\n\n") if len(p) > 40]
    rng = random.Random(seed)
    target = megabytes * 1_000_000
    size = n = 0
    with open(path, "w", encoding="utf-8") as f:
        while size < target:
            text = "\n\n".join(rng.sample(paras, rng.randint(3, 12)))
            line = json.dumps({"text": text}) + "\n"
            f.write(line)
            size += len(line.encode())
            n += 1
    return n


def main() -> None:
    """Run the benchmark."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=int, default=50, help="corpus size in MB (default 50)")
    ap.add_argument("--loop-mb", type=int, default=10, help="MB used for the single-process loops")
    args = ap.parse_args()
    info = load_tokenizer(str(SAMPLE / "tokenizer"))
    tok = info.load()
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-tokenize-") as tmp:
        corpus = Path(tmp) / "corpus.jsonl"
        t = time.perf_counter()
        ndocs = make_corpus(corpus, args.mb)
        print(f"corpus: {corpus.stat().st_size / 1e6:.1f} MB, {ndocs:,} docs ({time.perf_counter() - t:.1f}s)")

        texts = []
        budget = args.loop_mb * 1_000_000
        with open(corpus, encoding="utf-8") as f:
            for line in f:
                texts.append(json.loads(line)["text"])
                budget -= len(line)
                if budget <= 0:
                    break
        t = time.perf_counter()
        ntok = sum(len(tok.encode(x, add_special_tokens=False).ids) for x in texts)
        dt = time.perf_counter() - t
        rows.append({"method": "loop encode() 1 proc", "workers": 1, "docs": len(texts), "tokens": ntok,
                     "seconds": round(dt, 3), "tokens_per_s": round(ntok / dt), "tokens_per_s_per_core": round(ntok / dt)})
        t = time.perf_counter()
        ntok = 0
        for i in range(0, len(texts), 256):
            ntok += sum(len(e.ids) for e in tok.encode_batch(texts[i : i + 256], add_special_tokens=False))
        dt = time.perf_counter() - t
        rows.append({"method": "encode_batch 1 proc", "workers": 1, "docs": len(texts), "tokens": ntok,
                     "seconds": round(dt, 3), "tokens_per_s": round(ntok / dt), "tokens_per_s_per_core": round(ntok / dt)})
        t = time.perf_counter()
        ntok = 0
        for i in range(0, len(texts), 256):  # what the data prep uses: same ids, no offsets
            ntok += sum(len(e.ids) for e in tok.encode_batch_fast(texts[i : i + 256], add_special_tokens=False))
        dt = time.perf_counter() - t
        rows.append({"method": "encode_batch_fast 1 proc", "workers": 1, "docs": len(texts), "tokens": ntok,
                     "seconds": round(dt, 3), "tokens_per_s": round(ntok / dt), "tokens_per_s_per_core": round(ntok / dt)})

        for workers in (1, 2):
            out = Path(tmp) / f"out{workers}"
            cfg = {"input": {"paths": [str(corpus)]}, "tokenizer": {"path": str(SAMPLE / "tokenizer")},
                   "output_dir": str(out), "num_shards": 8, "split": "98,1,1", "workers": workers}
            t = time.perf_counter()
            s = run_pretrain(cfg)  # includes Ray start-up, scanning and writing bin/idx
            dt = time.perf_counter() - t
            rows.append({"method": f"data prep (Ray) {workers} worker(s)", "workers": workers, "docs": s["documents"],
                         "tokens": s["tokens"], "seconds": round(dt, 3), "tokens_per_s": round(s["tokens"] / dt),
                         "tokens_per_s_per_core": round(s["tokens"] / dt / workers)})

    base = next(r for r in rows if r["workers"] == 1 and r["method"].startswith("data prep"))
    for r in rows:
        if r["method"].startswith("data prep"):
            r["speedup_vs_1_worker"] = round(r["tokens_per_s"] / base["tokens_per_s"], 2)
    print(f"\n{'method':<30} {'docs':>9} {'tokens':>12} {'s':>8} {'tok/s':>12} {'tok/s/core':>12}")
    for r in rows:
        print(f"{r['method']:<30} {r['docs']:>9,} {r['tokens']:>12,} {r['seconds']:>8.2f} "
              f"{r['tokens_per_s']:>12,} {r['tokens_per_s_per_core']:>12,}")
    result = {
        "benchmark": "tokenize",
        "corpus_mb": args.mb,
        "tokenizer": "sample_data/tokenizer (BPE, vocab 4096)",
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform()},
        "note": "data-prep rows include Ray start-up, input scan and bin/idx writing",
        "results": rows,
    }
    dest = ROOT / "bench/results/tokenize.json"
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_text(json.dumps(result, indent=2) + "\n")
    print(f"\nwrote {dest}")


if __name__ == "__main__":
    main()
