"""Packaging benchmark: nemo-run's GitArchivePackager vs ``git archive | gzip -1`` vs ours.

Generates a committed repo of 3,000 files (~26 MB, mixed sizes) in a temp dir
and measures, per call (median of a few runs):

* nemo-run ``GitArchivePackager``           (fresh output name per call)
* ``git archive --format=tar HEAD | gzip -1`` (the baseline)
* our git packager, cold (cache empty) and warm (nothing changed)
* our code packager, cold and warm
* our pattern packager (``**/*.py``: every file), warm, for information

Warm calls are measured interleaved with their floors in the same loop (one
round = each floor and each warm call once, order rotated), so load from
other work on the machine hits them alike: ``git status --porcelain`` (what a
warm call used to run) and ``git status --porcelain -uno`` (git lstat-ing every
tracked file, nothing else: no warm call that checks every file can be faster).

Prints a table, writes ``bench/results/packaging.json`` and exits non-zero if
our cold git packager is more than 2x the baseline or a warm git/code call takes
more than 0.05 s.

Run: ``.venv/bin/python bench/bench_packaging.py [--files 3000] [--repeat 3] [--warm-rounds 21]``
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "src"))

from nemo_runspec.packaging.code import package_code  # noqa: E402
from nemo_runspec.packaging.git import package_git  # noqa: E402
from nemo_runspec.packaging.pattern import package_pattern  # noqa: E402


def make_repo(root: Path, n_files: int, total_bytes: int, seed: int = 0) -> int:
    """A committed repo of ``n_files`` text-like files adding up to about ``total_bytes``."""
    rng = random.Random(seed)
    # log-normal-ish sizes: many small files, a few large ones
    weights = [rng.lognormvariate(0, 1.2) for _ in range(n_files)]
    scale = total_bytes / sum(weights)
    words = [f"tok{i}" for i in range(2000)] + ["def", "return", "import", "self", "x", "=", "(", ")"]
    written = 0
    for i, w in enumerate(weights):
        size = max(16, int(w * scale))
        path = root / f"pkg{i % 40}" / f"sub{i % 7}" / f"file_{i}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        chunk = " ".join(rng.choice(words) for _ in range(400)).encode() + b"\n"
        data = (chunk * (size // len(chunk) + 1))[:size]
        # some entropy so gzip has real work to do
        data = bytes(b ^ (rng.getrandbits(1) if j % 97 == 0 else 0) for j, b in enumerate(data[:256])) + data[256:]
        path.write_bytes(data)
        written += len(data)
    env = {**os.environ, "GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@x", "GIT_COMMITTER_NAME": "b", "GIT_COMMITTER_EMAIL": "b@x"}
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "bench"]):
        subprocess.run(["git", *args], cwd=root, env=env, check=True)
    return written


def timed(fn, repeat: int) -> tuple[float, list[float]]:
    runs = []
    for i in range(repeat):
        t0 = time.perf_counter()
        fn(i)
        runs.append(time.perf_counter() - t0)
    return statistics.median(runs), runs


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--files", type=int, default=3000)
    ap.add_argument("--mb", type=float, default=26.0)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--out", default=str(HERE / "results" / "packaging.json"))
    ap.add_argument("--skip-nemo-run", action="store_true", help="do not time nemo-run (slow on big repos)")
    ap.add_argument("--warm-rounds", type=int, default=21, help="interleaved rounds of the warm calls and floors")
    args = ap.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="bench-packaging-"))
    os.environ["NEMOTRON_HOME"] = str(tmp / "home")
    try:
        repo = tmp / "repo"
        repo.mkdir()
        size = make_repo(repo, args.files, int(args.mb * 1e6))
        out = tmp / "out"
        out.mkdir()
        results: dict[str, dict] = {}

        def record(name: str, fn, repeat: int = args.repeat) -> None:
            med, runs = timed(fn, repeat)
            results[name] = {"median_s": round(med, 4), "runs_s": [round(r, 4) for r in runs]}

        def baseline(i: int) -> None:
            target = out / f"baseline{i}.tar.gz"
            subprocess.run(f"git archive --format=tar HEAD | gzip -1 > {target}", shell=True, cwd=repo, check=True)

        record("git archive | gzip -1 (baseline)", baseline)

        def nemo_run_git(i: int) -> None:
            from nemo_run.core.packaging.git import GitArchivePackager

            cwd = os.getcwd()
            os.chdir(repo)  # nemo-run needs the process cwd inside the repo
            try:
                GitArchivePackager().package(repo, str(out), f"nemorun{i}")
            finally:
                os.chdir(cwd)


        try:
            if args.skip_nemo_run:
                raise ImportError("skipped (--skip-nemo-run)")
            import nemo_run.core.packaging.git  # noqa: F401  (import cost not timed)

            with open(os.devnull) as devnull:
                old_stdin, sys.stdin = sys.stdin, devnull
                try:
                    record("nemo-run GitArchivePackager", nemo_run_git)
                finally:
                    sys.stdin = old_stdin
        except ImportError as e:
            results["nemo-run GitArchivePackager"] = {"median_s": None, "error": str(e)}

        def ours_git_cold(i: int) -> None:
            shutil.rmtree(tmp / "home", ignore_errors=True)
            package_git(repo, out / f"git{i}.tar.gz")

        def ours_git_warm(i: int) -> None:
            plan = package_git(repo, out / "gitw.tar.gz")
            assert plan.cached

        def ours_code_cold(i: int) -> None:
            shutil.rmtree(tmp / "home", ignore_errors=True)
            package_code(repo, out / f"code{i}.tar.gz")

        def ours_code_warm(i: int) -> None:
            plan = package_code(repo, out / "codew.tar.gz")
            assert plan.cached

        def ours_pattern_warm(i: int) -> None:
            plan = package_pattern(["**/*.py"], repo, out / "patternw.tar.gz")
            assert plan.cached

        def status(*extra: str):
            def run(i: int) -> None:
                subprocess.run(["git", "status", "--porcelain", *extra], cwd=repo, check=True, capture_output=True)
            return run

        record("ours: git cold", ours_git_cold)
        record("ours: code cold", ours_code_cold)
        package_git(repo, out / "gitw.tar.gz")
        package_pattern(["**/*.py"], repo, out / "patternw.tar.gz")
        warm = {
            "git status --porcelain (floor, same rounds)": status(),
            "git status --porcelain -uno (lstat floor, same rounds)": status("-uno"),
            "ours: git warm": ours_git_warm,
            "ours: code warm": ours_code_warm,
            "ours: pattern warm (info)": ours_pattern_warm,
        }
        runs: dict[str, list[float]] = {k: [] for k in warm}
        names = list(warm)
        for r in range(args.warm_rounds):
            for name in names[r % len(names):] + names[: r % len(names)]:
                t0 = time.perf_counter()
                warm[name](r)
                runs[name].append(time.perf_counter() - t0)
        for name, rs in runs.items():
            results[name] = {"median_s": round(statistics.median(rs), 4), "runs_s": [round(x, 4) for x in rs]}
        floor_s = results["git status --porcelain -uno (lstat floor, same rounds)"]["median_s"]
        for name in ("ours: git warm", "ours: code warm", "ours: pattern warm (info)"):
            results[name]["x_lstat_floor"] = round(results[name]["median_s"] / floor_s, 2)

        base = results["git archive | gzip -1 (baseline)"]["median_s"]
        width = max(len(k) for k in results)
        print(f"repo: {args.files} files, {size / 1e6:.1f} MB committed; median of {args.repeat}+ runs")
        print(f"{'':{width}}  {'seconds':>8}  {'x baseline':>10}  {'x lstat floor':>13}")
        for name, r in results.items():
            med = r["median_s"]
            ratio = f"{med / base:10.2f}" if med is not None and base else f"{'-':>10}"
            floor_ratio = f"{r['x_lstat_floor']:13.2f}" if "x_lstat_floor" in r else f"{'':>13}"
            print(f"{name:{width}}  {med if med is not None else float('nan'):8.3f}  {ratio}  {floor_ratio}")

        failures = []
        if results["ours: git cold"]["median_s"] > 2 * base:
            failures.append(f"git cold {results['ours: git cold']['median_s']:.3f}s > 2x baseline {base:.3f}s")
        for k in ("ours: git warm", "ours: code warm"):
            if results[k]["median_s"] > 0.05:
                failures.append(f"{k} {results[k]['median_s']:.3f}s > 0.05s")
        payload = {
            "command": " ".join([Path(sys.executable).name, *sys.argv]),
            "files": args.files, "bytes": size, "repeat": args.repeat, "warm_rounds": args.warm_rounds,
            "results": results,
            "failures": failures, "python": sys.version.split()[0], "cpus": os.cpu_count(),
        }
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(payload, indent=2) + "\n")
        print(f"wrote {args.out}")
        for f in failures:
            print(f"FAIL: {f}", file=sys.stderr)
        return 1 if failures else 0
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
