#!/usr/bin/env python3
"""Benchmark pretrain tokenization: throughput, and the data prep against its floor.

Generates a >= 50 MB JSONL corpus (paragraphs of the shipped sample corpus,
shuffled) in a temp dir and measures, with the shipped sample tokenizer:

1. a plain single-process loop calling ``Tokenizer.encode`` one document at a time,
2. single-process ``encode_batch`` and ``encode_batch_fast`` loops (rayon pinned to one
   thread; the data prep uses ``encode_batch_fast``: same ids, no character offsets),
3. paired rounds, each a fresh process tree timed from start to exit, with the
   proportional set size (PSS, /proc/<pid>/smaps_rollup) of every process of the
   tree summed and sampled every 0.1 s (peak reported):

   * the floor: ``--workers`` plain Python processes, each reading its part of the
     corpus and calling ``encode_batch_fast`` (json + tokenizers, nothing else);
   * the data prep (``stage0_pretrain/data_prep.py``: config load and checks, input
     scan, sharding, tokenizing, bin/idx writing) with ``workers=N``, once per
     ``--modes`` entry: ``auto`` (what a local run does: a forked process pool above
     the in-process threshold) and ``ray`` (``NEMOTRON_DATA_PREP_RAY=1``: a local Ray
     instance, as on a Ray cluster). The order rotates each round, so load from other
     work on the machine hits all alike.

   Every data-prep run writes into the same output dir, and the output files (all
   but ``.done/`` markers) must be byte-identical across modes and rounds.
4. where the worker pool starts paying for itself: the data prep in this process vs
   pooled on the first 0.25 ... 4 MB of the corpus (``--threshold-mb``), in this
   process (no interpreter start-up on either side), outputs compared.

Prints a table and writes bench/results/tokenize.json (ratios: median data prep /
median floor of the same rounds).
Usage: ``.venv/bin/python bench/bench_tokenize.py [--mb 50] [--workers 2] [--rounds 3] [--modes auto,ray]``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

os.environ["RAYON_NUM_THREADS"] = "1"  # one core per process, before tokenizers loads
os.environ.setdefault("RAY_DISABLE_USAGE_STATS", "1")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from nemotron.data_prep.tokenizer import load_tokenizer  # noqa: E402

SAMPLE = ROOT / "src/nemotron/recipes/nano3/sample_data"
DATA_PREP = ROOT / "src/nemotron/recipes/nano3/stage0_pretrain/data_prep.py"

#: One floor process: json + tokenizers, its byte range of the corpus, encode_batch_fast
#: in batches of 256 (as the data prep), token count on stdout.
FLOOR = """
import json, sys
from tokenizers import Tokenizer
tok = Tokenizer.from_file(sys.argv[1])
start, end = int(sys.argv[3]), int(sys.argv[4])
n = 0
batch = []
with open(sys.argv[2], "rb") as f:
    f.seek(start)
    while f.tell() < end:
        line = f.readline()
        if not line:
            break
        batch.append(json.loads(line)["text"])
        if len(batch) == 256:
            n += sum(len(e.ids) for e in tok.encode_batch_fast(batch, add_special_tokens=False))
            batch = []
n += sum(len(e.ids) for e in tok.encode_batch_fast(batch, add_special_tokens=False))
print(n)
"""


class TreePss:
    """Peak summed PSS of every process carrying ``marker`` in its environment, sampled."""

    def __init__(self, marker: str, interval: float = 0.1) -> None:
        self.needle = f"BENCH_TREE={marker}".encode()
        self.interval = interval
        self.peak_kb = 0
        self.peak_procs = 0
        # processes that existed before the run are not part of it; a new one is checked
        # until it carries the marker (between fork and exec it still has its parent's environment)
        self._before = {int(n) for n in os.listdir("/proc") if n.isdigit()}
        self._ours: set[int] = set()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> TreePss:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def sample(self) -> None:
        total = procs = 0
        for name in os.listdir("/proc"):
            if not name.isdigit():
                continue
            pid = int(name)
            if pid in self._before:
                continue
            if pid not in self._ours:
                try:
                    with open(f"/proc/{pid}/environ", "rb") as f:
                        if self.needle not in f.read():
                            continue
                except OSError:
                    continue
                self._ours.add(pid)
            try:
                with open(f"/proc/{pid}/smaps_rollup") as f:
                    for line in f:
                        if line.startswith("Pss:"):
                            total += int(line.split()[1])
                            procs += 1
                            break
            except OSError:
                continue
        if total > self.peak_kb:
            self.peak_kb, self.peak_procs = total, procs

    def _run(self) -> None:
        while not self._stop.is_set():
            self.sample()
            self._stop.wait(self.interval)


def run_tree(cmds: list[list[str]], env: dict[str, str]) -> tuple[float, float, int, list[str], float]:
    """Start ``cmds`` together, wait for all; (seconds, peak PSS MB, processes at the peak, stdouts,
    CPU seconds of the tree: user + system of every process reaped, less sensitive to other load)."""
    import resource

    marker = uuid.uuid4().hex
    env = {**env, "BENCH_TREE": marker}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    with TreePss(marker) as pss:
        t = time.perf_counter()
        procs = [subprocess.Popen(c, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for c in cmds]
        outs = []
        for pr in procs:
            out, err = pr.communicate()
            if pr.returncode != 0:
                raise SystemExit(f"{' '.join(pr.args)} failed ({pr.returncode}):\n{err[-3000:]}")
            outs.append(out)
        dt = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return dt, pss.peak_kb / 1024, pss.peak_procs, outs, cpu


def split_points(path: Path, parts: int) -> list[int]:
    """Byte offsets cutting ``path`` into ``parts`` ranges at line starts."""
    size = path.stat().st_size
    cuts = [0]
    with open(path, "rb") as f:
        for i in range(1, parts):
            f.seek(size * i // parts)
            f.readline()
            cuts.append(f.tell())
    return [*cuts, size]


def tree_digest(root: Path) -> str:
    """sha256 over the output files (names and bytes), ``.done/`` markers left out (they hold timings)."""
    h = hashlib.sha256()
    for p in sorted(root.rglob("*")):
        if p.is_file() and ".done" not in p.relative_to(root).parts:
            h.update(p.relative_to(root).as_posix().encode() + b"\0" + p.read_bytes())
    return h.hexdigest()


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


def paired_rounds(tmp: Path, corpus: Path, args: argparse.Namespace) -> dict:
    """The floor and each data-prep mode, ``args.rounds`` times, order rotated per round."""
    tok_json = str(SAMPLE / "tokenizer" / "tokenizer.json")
    cuts = split_points(corpus, args.workers)
    out = tmp / "prep-out"
    cfg = tmp / "prep.yaml"
    cfg.write_text(json.dumps({  # JSON is YAML
        "input": {"paths": [str(corpus)], "format": "jsonl", "text_field": "text"},
        "tokenizer": {"path": str(SAMPLE / "tokenizer")},
        "output_dir": str(out), "num_shards": args.num_shards, "split": "98,1,1", "workers": args.workers,
    }))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NEMOTRON_", "RAY_ADDRESS"))}
    env.update(RAYON_NUM_THREADS="1", RAY_DISABLE_USAGE_STATS="1", NEMOTRON_HOME=str(tmp / "home"),
               PYTHONPATH=str(ROOT / "src"))
    floor = [[sys.executable, "-c", FLOOR, tok_json, str(corpus), str(cuts[i]), str(cuts[i + 1])]
             for i in range(args.workers)]
    runs: dict[str, list[dict]] = {"floor": []}
    envs = {"floor": env}

    def mode_of(name: str) -> str:
        return name.removeprefix("data prep ")

    for mode in [m.strip() for m in args.modes.split(",") if m.strip()]:
        name = f"data prep {mode}"
        runs[name] = []
        envs[name] = {**env, "NEMOTRON_DATA_PREP_RAY": "1"} if mode == "ray" else env
    digests: dict[str, str] = {}
    names = list(runs)
    for r in range(args.rounds):
        for name in names[r % len(names):] + names[: r % len(names)]:
            if name == "floor":
                dt, pss, procs, outs, cpu = run_tree(floor, envs[name])
                runs[name].append({"seconds": round(dt, 3), "cpu_s": round(cpu, 2), "peak_pss_mb": round(pss, 1),
                                   "procs": procs, "tokens": sum(int(o.split()[-1]) for o in outs)})
            else:
                shutil.rmtree(out, ignore_errors=True)
                dt, pss, procs, _, cpu = run_tree([[sys.executable, str(DATA_PREP), "--config", str(cfg)]],
                                                  envs[name])
                if mode_of(name) == "ray":
                    cpu = None  # Ray's workers and daemons are not reaped inside the tree: not counted
                digest = tree_digest(out)
                digests.setdefault(digest, f"{name} round {r}")
                runs[name].append({"seconds": round(dt, 3), "cpu_s": None if cpu is None else round(cpu, 2),
                                   "peak_pss_mb": round(pss, 1), "procs": procs, "output_sha256": digest})
            cpu_text = "   n/a" if cpu is None else f"{cpu:6.2f}"
            print(f"round {r}: {name:<20} {dt:6.2f} s  CPU {cpu_text} s  peak PSS {pss:7.1f} MB  ({procs} processes)",
                  flush=True)
    if len(digests) > 1:
        raise SystemExit(f"data-prep outputs differ between runs: {digests}")
    floor_s = statistics.median(x["seconds"] for x in runs["floor"])
    floor_cpu = statistics.median(x["cpu_s"] for x in runs["floor"])
    floor_pss = statistics.median(x["peak_pss_mb"] for x in runs["floor"])
    summary = {}
    for name, rs in runs.items():
        med_s = statistics.median(x["seconds"] for x in rs)
        cpus = [x["cpu_s"] for x in rs if x["cpu_s"] is not None]
        med_cpu = statistics.median(cpus) if cpus else None
        med_pss = statistics.median(x["peak_pss_mb"] for x in rs)
        # each round's own ratio to the floor of the same round: the load of that moment hits both
        per_round = [round(x["seconds"] / f["seconds"], 2) for x, f in zip(rs, runs["floor"], strict=True)]
        summary[name] = {"median_s": round(med_s, 3), "x_floor_time": round(med_s / floor_s, 2),
                         "x_floor_time_per_round": per_round,
                         "median_cpu_s": None if med_cpu is None else round(med_cpu, 2),
                         "x_floor_cpu": None if med_cpu is None else round(med_cpu / floor_cpu, 2),
                         "median_peak_pss_mb": round(med_pss, 1), "x_floor_pss": round(med_pss / floor_pss, 2),
                         "procs_at_peak": max(x["procs"] for x in rs)}
    return {"workers": args.workers, "rounds": args.rounds, "num_shards": args.num_shards,
            "cpu_note": "cpu_s: user+system seconds of the processes the tree reaped (getrusage RUSAGE_CHILDREN); "
                        "not given for Ray, whose workers and daemons are not reaped inside the tree",
            "outputs_identical": len(digests) == 1, "summary": summary, "runs": runs}


def threshold_runs(tmp: Path, corpus: Path, args: argparse.Namespace) -> dict:
    """In this process vs the worker pool (``args.workers``) on the first N MB of the corpus:
    where the pool starts paying for itself (``IN_PROCESS_BYTES`` in the runner)."""
    import io

    from nemotron.data_prep.pretrain import run_pretrain

    sizes = [float(x) for x in args.threshold_mb.split(",") if x.strip()]
    out: dict[str, dict] = {}
    old = os.environ.get("NEMOTRON_DATA_PREP_IN_PROCESS_BYTES")
    os.environ.setdefault("NEMOTRON_HOME", str(tmp / "home"))
    try:
        for mb in sizes:
            part = tmp / f"part-{mb}.jsonl"
            with open(corpus, "rb") as src, open(part, "wb") as dst:
                while dst.tell() < mb * 1e6 and (line := src.readline()):
                    dst.write(line)
            runs: dict[str, list[float]] = {"in_process": [], "pool": []}
            digests = set()
            for _ in range(args.threshold_repeat):
                for mode in runs:
                    target = tmp / "threshold-out"
                    shutil.rmtree(target, ignore_errors=True)
                    os.environ["NEMOTRON_DATA_PREP_IN_PROCESS_BYTES"] = "1000000000000" if mode == "in_process" else "0"
                    cfg = {"input": {"paths": [str(part)]}, "tokenizer": {"path": str(SAMPLE / "tokenizer")},
                           "output_dir": str(target), "num_shards": args.num_shards, "split": "98,1,1",
                           "workers": args.workers}
                    t = time.perf_counter()
                    run_pretrain(cfg, stream=io.StringIO())
                    runs[mode].append(round(time.perf_counter() - t, 3))
                    digests.add(tree_digest(target))
            if len(digests) != 1:
                raise SystemExit(f"in-process and pooled outputs differ at {mb} MB")
            med = {m: statistics.median(v) for m, v in runs.items()}
            out[f"{mb:g} MB"] = {"in_process_s": round(med["in_process"], 3), "pool_s": round(med["pool"], 3),
                                 "runs": runs}
            print(f"threshold {mb:6g} MB: in process {med['in_process']:.2f} s, pool of {args.workers} "
                  f"{med['pool']:.2f} s", flush=True)
    finally:
        if old is None:
            os.environ.pop("NEMOTRON_DATA_PREP_IN_PROCESS_BYTES", None)
        else:
            os.environ["NEMOTRON_DATA_PREP_IN_PROCESS_BYTES"] = old
    return out


def main() -> None:
    """Run the benchmark."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=int, default=50, help="corpus size in MB (default 50)")
    ap.add_argument("--loop-mb", type=int, default=10, help="MB used for the single-process loops")
    ap.add_argument("--workers", type=int, default=2, help="data-prep workers and floor processes (default 2)")
    ap.add_argument("--rounds", type=int, default=3, help="paired rounds (default 3; 0: none)")
    ap.add_argument("--modes", default="auto,ray", help="data-prep modes to run: auto, ray (default both)")
    ap.add_argument("--num-shards", type=int, default=8, help="data-prep num_shards (default 8)")
    ap.add_argument("--threshold-mb", default="0.25,0.5,1,2,4",
                    help="input sizes (MB) timed in process vs pooled, in this process ('' to skip)")
    ap.add_argument("--threshold-repeat", type=int, default=3)
    ap.add_argument("--out", default=str(ROOT / "bench/results/tokenize.json"))
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

        paired = paired_rounds(Path(tmp), corpus, args) if args.rounds > 0 else {}
        threshold = threshold_runs(Path(tmp), corpus, args) if args.threshold_mb.strip() else {}

    print(f"\n{'method':<30} {'docs':>9} {'tokens':>12} {'s':>8} {'tok/s':>12} {'tok/s/core':>12}")
    for r in rows:
        print(f"{r['method']:<30} {r['docs']:>9,} {r['tokens']:>12,} {r['seconds']:>8.2f} "
              f"{r['tokens_per_s']:>12,} {r['tokens_per_s_per_core']:>12,}")
    print(f"\npaired rounds ({args.rounds}), {args.workers} worker(s); medians; x floor = median / median floor")
    paired = paired or {"summary": {}}
    print(f"{'run':<24} {'seconds':>8} {'x floor':>8} {'CPU s':>7} {'x floor':>8} {'peak PSS MB':>12} "
          f"{'x floor':>8} {'procs':>6}")
    for name, r in paired["summary"].items():
        cpu = ("    n/a      n/a" if r["median_cpu_s"] is None
               else f"{r['median_cpu_s']:>7.1f} {r['x_floor_cpu']:>8.2f}")
        print(f"{name:<24} {r['median_s']:>8.2f} {r['x_floor_time']:>8.2f} {cpu} {r['median_peak_pss_mb']:>12.0f} "
              f"{r['x_floor_pss']:>8.2f} {r['procs_at_peak']:>6}")
    result = {
        "benchmark": "tokenize",
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
        "corpus_mb": args.mb,
        "tokenizer": "sample_data/tokenizer (BPE, vocab 4096)",
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform()},
        "note": "single-process rows: tokenization only, in this process. Paired rounds: whole process trees "
                "from start to exit (interpreter start-up, imports, config checks, input scan, bin/idx writing "
                "for the data prep); PSS summed over every process of the tree, peak of 0.1 s samples",
        "results": rows,
        "paired": paired,
        "threshold": threshold,
    }
    dest = Path(args.out)
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_text(json.dumps(result, indent=2) + "\n")
    print(f"\nwrote {dest}")


if __name__ == "__main__":
    main()
