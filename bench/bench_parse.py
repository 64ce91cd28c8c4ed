"""Benchmark ``nemo_runspec.parse`` over 1,000 distinct generated recipe scripts.

Run: ``.venv/bin/python bench/bench_parse.py [--files N] [--repeat R]``

Prints cold (empty cache: read + PEP 723 scan + TOML + validation) and warm
(cached) timings and exits 1 when either is over target:

- cold: at most 0.3 s for 1,000 files (best of ``--repeat`` runs)
- warm: at most 0.05 s for 1,000 files
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

COLD_TARGET_S = 0.3
WARM_TARGET_S = 0.05
TARGET_FILES = 1000

_BODY = '''
"""Training entry point for recipe {i}."""

import argparse
import os


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--config", default="config/default.yaml")
    args = parser.parse_args()
    print("running", args.config, os.getcwd())


if __name__ == "__main__":
    main()
'''


def _recipe(i: int) -> str:
    launch = ("torchrun", "ray", "direct", "python")[i % 4]
    return (
        "#!/usr/bin/env python3\n"
        "# /// script\n"
        '# requires-python = ">=3.10"\n'
        '# dependencies = ["omegaconf>=2.3"]\n'
        "#\n"
        "# [tool.runspec]\n"
        '# schema = "1"\n'
        f'# docs = "https://example.invalid/recipes/{i}"\n'
        f'# name = "bench/recipe-{i}"\n'
        f'# image = "nvcr.io/nvidia/nemo:25.{i % 12 + 1:02d}"\n'
        '# setup = "pip install -e ."\n'
        "#\n"
        "# [tool.runspec.run]\n"
        f'# launch = "{launch}"\n'
        f'# workdir = "/opt/work/{i}"\n'
        "#\n"
        "# [tool.runspec.config]\n"
        '# dir = "./config"\n'
        f'# default = "tiny-{i % 7}"\n'
        "#\n"
        "# [tool.runspec.resources]\n"
        f"# nodes = {i % 16 + 1}\n"
        f"# gpus_per_node = {i % 8 + 1}\n"
        "#\n"
        "# [tool.runspec.env]\n"
        '# NCCL_DEBUG = "WARN"\n'
        f'# RECIPE_INDEX = "{i}"\n'
        "# ///\n" + _BODY.format(i=i)
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", type=int, default=TARGET_FILES)
    ap.add_argument("--repeat", type=int, default=3, help="cold runs; the best counts")
    args = ap.parse_args(argv)

    t0 = time.perf_counter()
    from nemo_runspec.spec.parser import clear_cache, parse

    import_s = time.perf_counter() - t0

    with tempfile.TemporaryDirectory(prefix="bench-runspec-") as tmp:
        paths = []
        for i in range(args.files):
            p = Path(tmp) / f"recipe_{i:04d}" / "train.py"
            p.parent.mkdir()
            p.write_text(_recipe(i), encoding="utf-8")
            paths.append(str(p))

        cold_runs = []
        for _ in range(max(1, args.repeat)):
            clear_cache()
            t0 = time.perf_counter()
            specs = [parse(p) for p in paths]
            cold_runs.append(time.perf_counter() - t0)
        cold = min(cold_runs)
        assert len({s.name for s in specs}) == args.files, "files were not distinct"

        t0 = time.perf_counter()
        for p in paths:
            parse(p)
        warm = time.perf_counter() - t0

    scale = TARGET_FILES / args.files
    rows = [
        ("import _parser", import_s, None, None),
        (f"cold (best of {len(cold_runs)})", cold, COLD_TARGET_S, cold * scale),
        ("warm (cached)", warm, WARM_TARGET_S, warm * scale),
    ]
    print(f"{'phase':<20} {'total s':>9} {'per file us':>12} {'target s/1k':>12}  status")
    failed = False
    for label, secs, target, per_1k in rows:
        per_file = "" if target is None else f"{secs / args.files * 1e6:12.1f}"
        if target is None:
            print(f"{label:<20} {secs:9.4f} {'':>12} {'':>12}")
            continue
        ok = per_1k <= target
        failed |= not ok
        print(f"{label:<20} {secs:9.4f} {per_file} {target:12.3f}  {'ok' if ok else 'OVER'}")
    print(f"files: {args.files}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
