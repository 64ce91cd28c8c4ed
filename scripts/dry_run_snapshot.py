#!/usr/bin/env python3
"""Byte-identity harness for ``nemotron ... --dry-run``: store what every recipe command shows,
then check that a refactor shows exactly the same.

    python scripts/dry_run_snapshot.py list [-k GLOB]
    python scripts/dry_run_snapshot.py write DIR [-k GLOB]
    python scripts/dry_run_snapshot.py check DIR [-k GLOB] [--expect-change FILE]

``write`` runs every case (a recipe command line with ``--dry-run`` on one profile) and stores
``DIR/<case>.out``, ``.err`` and ``.rc`` (stdout, stderr, exit code). ``check`` runs the same
cases again and compares bytes: each difference is printed (the case and the start of a unified
diff), and the command exits 1 if any case changed that ``--expect-change`` does not name.
An expect-change file holds lines ``CASE-GLOB  reason`` (``#`` starts a comment); a change a
line names is reported with its reason, and a line that matches no changed case fails the
check too, so the file cannot go stale. ``-k GLOB`` (repeatable) selects the cases whose
name matches one of the GLOBs (``'pipe*@docker'``).

The cases: every recipe command (nano3 pretrain, sft, convert, rl, eval, model eval, the three
data prep stages, pipe, steps run; kit preflight) on the profiles ``none`` (no ``--run``),
``local``, ``slurm``, ``ray`` (a Slurm profile with the Ray knobs) and ``docker``, the platform
profiles ``skypilot``, ``dgxcloud`` and ``lepton`` for the single-job commands, and a few forms
(a sweep, ``pipe --launcher sbatch``, ``--scales``, ``nemotron run SCRIPT``). They are written
from an env.toml this script generates with fake values only (``list`` prints them).

What legitimately differs between two runs is made equal, and nothing else:

* The clock. Each case runs in a child process (``_run``) that, before ``nemotron`` is
  imported, fixes ``time.time``, ``time.time_ns``, ``time.gmtime``/``time.localtime``/
  ``time.strftime`` without a time argument, and ``datetime.datetime.now``/``utcnow``/
  ``today`` to one instant, 2027-01-15T08:00:00.123456789Z. Experiment ids, job dir names
  and the provenance ``time`` derive from it. ``time.monotonic``/``perf_counter`` tick
  (timeouts use them).
* Temporary paths. Every case runs with ``HOME``, ``NEMOTRON_HOME``, ``NEMORUN_HOME``,
  ``TMPDIR`` and its working directory under one scratch root, emptied before each case;
  ``write`` records the root in ``DIR/snapshot.json`` and ``check`` reuses it, so job dir
  paths are equal. The caller's ``NEMOTRON_*`` variables are removed; ``COLUMNS=160``,
  ``TERM=dumb``, ``NO_COLOR=1``, ``TZ=UTC``, ``LC_ALL=C.UTF-8`` and ``PYTHONHASHSEED=0`` are set.
* The checkout's git state, the one thing that must change between two commits: the output's
  occurrences of the current HEAD commit (40 hex digits) become ``<commit>``, and the
  ``dirty:`` and ``branch:`` values of a ``git:`` block (the job's provenance) become
  ``<dirty>`` and ``<branch>``.

Snapshots are compared in the checkout that wrote them (they hold its paths and this machine's
host and user names) and are not committed.
"""

from __future__ import annotations

import argparse
import contextlib
import difflib
import fcntl
import fnmatch
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: The fixed instant of every case (ns since the epoch): 2027-01-15T08:00:00.123456789Z.
FROZEN_NS = 1_800_000_000_123_456_789
CASE_TIMEOUT_S = 600

ENV_TOML = """\
[local]
executor = "local"
local_nproc = 2
env_vars = { PLAIN_VAR = "plain", HF_TOKEN = "hf_fakeSnapshotToken0123456789" }

[slurm]
executor = "slurm"
account = "acct"
partition = "batch"
nodes = 2
gpus_per_node = 8
container_image = "nvcr.io/nvidia/nemo:25.07"
env_vars = { PLAIN_VAR = "plain", HF_TOKEN = "hf_fakeSnapshotToken0123456789" }
startup_commands = ["echo starting"]
mounts = ["/lustre/data:/data"]

[ray]
extends = "slurm"
ray_port_base = 20000
ray_timeout = 120

[docker]
executor = "docker"
container_image = "python:3.11-slim"
shm_size = "8g"
ipc_mode = "host"
env_vars = { PLAIN_VAR = "plain" }

[skypilot]
executor = "skypilot"
container_image = "nvcr.io/nvidia/nemo:25.07"
cloud = "kubernetes"

[dgxcloud]
executor = "dgxcloud"
container_image = "nvcr.io/nvidia/nemo:25.07"
base_url = "https://dgx.invalid/api/v1"
kube_apiserver_url = "https://k8s.invalid"
client_id = "my-app"
client_secret = "${oc.env:DGXC_CLIENT_SECRET,unset}"
project_name = "proj"
pvc_nemo_run_dir = "/ws/nemo-run"
pvcs = [{ claimName = "ws", path = "/ws" }]

[lepton]
executor = "lepton"
container_image = "nvcr.io/nvidia/nemo:25.07"
nemo_run_dir = "/shared/nr"
resource_shape = "gpu.8xh100-80gb"
node_group = "ng"
mounts = [{ path = "/shared", mount_path = "/shared", from = "node-nfs:x" }]
"""

HELLO = """\
# /// script
# [tool.runspec]
# schema = "1"
# name = "demo/hello"
# [tool.runspec.run]
# launch = "direct"
# [tool.runspec.config]
# dir = "./config"
# default = "default"
# ///
import sys
print("hello", sys.argv[1:])
"""

BASE_PROFILES = ("none", "local", "slurm", "ray", "docker")
PLATFORMS = ("skypilot", "dgxcloud", "lepton")

#: (slug, argv without the profile) run on every base profile; "+platforms": also on PLATFORMS.
COMMANDS: tuple[tuple[str, tuple[str, ...], bool], ...] = (
    ("pretrain", ("nano3", "pretrain"), True),
    ("pretrain-tiny", ("nano3", "pretrain", "-c", "tiny"), True),
    ("sft-tiny", ("nano3", "sft", "-c", "tiny"), True),
    ("convert", ("nano3", "convert"), True),
    ("rl-tiny", ("nano3", "rl", "-c", "tiny"), True),
    ("eval-tiny", ("nano3", "eval", "-c", "tiny"), True),
    ("eval-tasks", ("nano3", "eval", "--task", "mmlu", "--task", "gsm8k"), False),
    ("model-eval-tiny", ("nano3", "model", "eval", "-c", "tiny"), False),
    ("prep-pretrain-tiny", ("nano3", "data", "prep", "pretrain", "-c", "tiny"), True),
    ("prep-sft-tiny", ("nano3", "data", "prep", "sft", "-c", "tiny"), False),
    ("prep-rl-tiny", ("nano3", "data", "prep", "rl", "-c", "tiny"), False),
    ("pipe-tiny", ("nano3", "pipe", "-c", "tiny"), False),
    ("pipe-tiny-pretrain-sft", ("nano3", "pipe", "-c", "tiny", "--stages", "pretrain:sft"), False),
    ("steps-run-pretrain-tiny", ("steps", "run", "nano3/pretrain", "-c", "tiny"), False),
    ("preflight", ("kit", "preflight"), True),
    ("sweep-pretrain-tiny", ("nano3", "pretrain", "-c", "tiny", "-m", "fallback.max_steps=5,10"), False),
    ("run-hello", ("run", "{scratch}/recipes/demo/hello.py"), False),
)
#: (case name, argv): forms that make sense on one profile only.
EXTRA_CASES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("pipe-tiny-sbatch@slurm", ("nano3", "pipe", "-c", "tiny", "--launcher", "sbatch", "--run", "slurm")),
    ("pipe-tiny-sbatch@ray", ("nano3", "pipe", "-c", "tiny", "--launcher", "sbatch", "--run", "ray")),
    ("pretrain-scales@none", ("nano3", "pretrain", "--scales")),
)


@dataclass(frozen=True)
class Case:
    """One command line, run with ``--dry-run`` and the generated env.toml."""

    name: str
    argv: tuple[str, ...]


def cases() -> list[Case]:
    """Every case, in a fixed order."""
    out = []
    for slug, argv, platforms in COMMANDS:
        for profile in BASE_PROFILES + (PLATFORMS if platforms else ()):
            run = () if profile == "none" else ("--run", profile)
            out.append(Case(f"{slug}@{profile}", argv + run))
    out.extend(Case(name, argv) for name, argv in EXTRA_CASES)
    return out


def select(patterns: Sequence[str] | None) -> list[Case]:
    """The cases whose name matches one of the globs ``patterns`` (all without any)."""
    return [c for c in cases() if not patterns or any(fnmatch.fnmatchcase(c.name, p) for p in patterns)]


# --------------------------------------------------------------------------- one case (child process)

def _freeze_clock() -> None:
    """Fix the wall clock at FROZEN_NS at the standard library's boundary (see the module docstring)."""
    import datetime as dt

    now = FROZEN_NS / 1e9
    real_localtime, real_gmtime, real_strftime = time.localtime, time.gmtime, time.strftime
    time.time = lambda: now
    time.time_ns = lambda: FROZEN_NS
    time.localtime = lambda secs=None: real_localtime(now if secs is None else secs)
    time.gmtime = lambda secs=None: real_gmtime(now if secs is None else secs)
    time.strftime = lambda fmt, t=None: real_strftime(fmt, real_localtime(now) if t is None else t)

    real = dt.datetime

    class FrozenDatetime(real):
        @classmethod
        def now(cls, tz=None):  # noqa: ANN001, ANN206 - datetime's own signature
            return real.fromtimestamp(now, tz)

        @classmethod
        def utcnow(cls):  # noqa: ANN206
            return real.fromtimestamp(now, dt.UTC).replace(tzinfo=None)

        @classmethod
        def today(cls):  # noqa: ANN206
            return real.fromtimestamp(now)

    dt.datetime = FrozenDatetime  # type: ignore[misc]


def _run_case(argv: Sequence[str]) -> int:
    _freeze_clock()
    from nemotron.cli.bin.nemotron import main

    try:
        rc = main(list(argv))
    except SystemExit as exit_:
        rc = exit_.code
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
    if rc is None:
        return 0
    return rc if isinstance(rc, int) else 1


# --------------------------------------------------------------------------- running and normalising

def _git(*args: str) -> str:
    proc = subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True, check=False)
    return proc.stdout.strip()


def normalise(text: str, commit: str) -> str:
    """``text`` with the checkout's git state replaced (see the module docstring), nothing else."""
    if commit:
        text = text.replace(commit, "<commit>")
    out, git_indent = [], None
    for line in text.split("\n"):
        indent = len(line) - len(line.lstrip(" "))
        if git_indent is not None and (indent <= git_indent or not line.strip()):
            git_indent = None
        if git_indent is not None:
            line = re.sub(r"^(\s*dirty:) (true|false)$", r"\1 <dirty>", line)
            line = re.sub(r"^(\s*branch:) .*$", r"\1 <branch>", line)
        elif line.strip() == "git:":
            git_indent = indent
        out.append(line)
    return "\n".join(out)


def _prepare_scratch(scratch: Path) -> dict[str, str]:
    """Empty ``scratch`` and lay out a fresh case there; the child's environment."""
    if scratch.exists():
        shutil.rmtree(scratch)
    for sub in ("home", "nemotron_home", "nemorun", "tmp", "cwd", "recipes/demo/config"):
        (scratch / sub).mkdir(parents=True)
    (scratch / "env.toml").write_text(ENV_TOML)
    (scratch / "recipes/demo/hello.py").write_text(HELLO)
    (scratch / "recipes/demo/config/default.yaml").write_text("greeting: hi\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("NEMOTRON_")}
    env.update(HOME=str(scratch / "home"), NEMOTRON_HOME=str(scratch / "nemotron_home"),
               NEMORUN_HOME=str(scratch / "nemorun"), TMPDIR=str(scratch / "tmp"), COLUMNS="160",
               LINES="50", TERM="dumb", NO_COLOR="1", TZ="UTC", LC_ALL="C.UTF-8", PYTHONHASHSEED="0")
    env.pop("FORCE_COLOR", None)
    return env


@contextlib.contextmanager
def _scratch_lock(scratch: Path) -> Iterator[None]:
    """Hold ``<scratch>.lock``: two writers or checkers never share a scratch root."""
    scratch.parent.mkdir(parents=True, exist_ok=True)
    with open(f"{scratch}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def run_case(case: Case, scratch: Path) -> tuple[bytes, bytes, bytes]:
    """Run ``case`` in a fresh scratch root; its normalised stdout, stderr and exit code."""
    commit = _git("rev-parse", "HEAD")  # per case: a commit made while the cases run changes nothing
    env = _prepare_scratch(scratch)
    argv = [a.replace("{scratch}", str(scratch)) for a in case.argv]
    cmd = [sys.executable, str(Path(__file__).resolve()), "_run", "--",
           "--env-file", str(scratch / "env.toml"), *argv, "--dry-run"]
    try:
        proc = subprocess.run(cmd, cwd=scratch / "cwd", env=env, capture_output=True,
                              stdin=subprocess.DEVNULL, timeout=CASE_TIMEOUT_S, check=False)
        out, err, rc = proc.stdout, proc.stderr, str(proc.returncode)
    except subprocess.TimeoutExpired as timeout:
        out, err, rc = timeout.stdout or b"", timeout.stderr or b"", "timeout"
    shutil.rmtree(scratch, ignore_errors=True)

    def norm(data: bytes) -> bytes:
        return normalise(data.decode("utf-8", "surrogateescape"), commit).encode("utf-8", "surrogateescape")

    return norm(out), norm(err), (rc + "\n").encode()


def _default_scratch() -> Path:
    return Path(tempfile.gettempdir()) / f"nemotron-dry-run-snapshot-{os.getuid()}"


# --------------------------------------------------------------------------- write / check

SUFFIXES = (".out", ".err", ".rc")


def write(snapshot: Path, pattern: Sequence[str] | None, scratch: Path) -> int:
    """Run the selected cases and store their output in ``snapshot``."""
    snapshot.mkdir(parents=True, exist_ok=True)
    commit = _git("rev-parse", "HEAD")
    meta = {"scratch": str(scratch), "commit": commit, "cases": [c.name for c in select(pattern)]}
    for case in select(pattern):
        start = time.monotonic()
        for suffix, data in zip(SUFFIXES, run_case(case, scratch), strict=True):
            (snapshot / f"{case.name}{suffix}").write_bytes(data)
        rc = (snapshot / f"{case.name}.rc").read_text().strip()
        print(f"{case.name}: exit {rc} ({time.monotonic() - start:.1f} s)", flush=True)
    (snapshot / "snapshot.json").write_text(json.dumps(meta, indent=1) + "\n")
    return 0


def _expectations(path: Path | None) -> list[tuple[str, str]]:
    if path is None:
        return []
    out = []
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            glob, _, reason = line.partition(" ")
            out.append((glob, reason.strip() or "(no reason given)"))
    return out


def check(snapshot: Path, pattern: Sequence[str] | None, expect_file: Path | None) -> int:
    """Run the selected cases again and compare them with ``snapshot``; the exit code."""
    meta_path = snapshot / "snapshot.json"
    if not meta_path.is_file():
        print(f"error: {meta_path}: no snapshot here (hint: write one with `write {snapshot}`)", file=sys.stderr)
        return 2
    meta = json.loads(meta_path.read_text())
    scratch = Path(meta["scratch"])
    expected = _expectations(expect_file)
    identical, changed, explained, matched = 0, [], 0, set()
    for case in select(pattern):
        if case.name not in meta["cases"]:
            print(f"{case.name}: not in the snapshot (write it again)")
            changed.append(case.name)
            continue
        now = run_case(case, scratch)
        diffs = []
        for suffix, data in zip(SUFFIXES, now, strict=True):
            before = (snapshot / f"{case.name}{suffix}").read_bytes()
            if before != data:
                diffs.extend(difflib.unified_diff(
                    before.decode("utf-8", "replace").splitlines(), data.decode("utf-8", "replace").splitlines(),
                    f"snapshot/{case.name}{suffix}", f"now/{case.name}{suffix}", lineterm="", n=2))
        if not diffs:
            identical += 1
            continue
        reasons = [(g, r) for g, r in expected if fnmatch.fnmatchcase(case.name, g)]
        matched.update(g for g, _ in reasons)
        if reasons:
            explained += 1
            print(f"{case.name}: changed, as expected ({reasons[0][1]})")
        else:
            changed.append(case.name)
            print(f"{case.name}: CHANGED")
        print("\n".join(diffs[:60]) + ("\n..." if len(diffs) > 60 else ""))
    stale = [g for g, _ in expected if g not in matched]
    for glob in stale:
        print(f"expected a change that did not happen: {glob}")
    print(f"{identical} identical, {len(changed)} changed, {explained} expected changes")
    return 1 if changed or stale else 0


def main(argv: Sequence[str] | None = None) -> int:
    """The command line (see the module docstring)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["_run"]:
        return _run_case(argv[2:] if argv[1:2] == ["--"] else argv[1:])
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for name in ("list", "write", "check"):
        p = sub.add_parser(name)
        if name != "list":
            p.add_argument("snapshot", type=Path)
        p.add_argument("-k", dest="pattern", action="append", metavar="GLOB",
                       help="only the cases whose name matches GLOB (repeatable: any of them)")
        if name == "write":
            p.add_argument("--scratch", type=Path, default=_default_scratch(), help=argparse.SUPPRESS)
        if name == "check":
            p.add_argument("--expect-change", type=Path, default=None, metavar="FILE")
    args = parser.parse_args(argv)
    if args.command == "list":
        for case in select(args.pattern):
            print(f"{case.name}: nemotron {' '.join(case.argv)} --dry-run")
        print(f"env.toml:\n{ENV_TOML}")
        return 0
    if args.command == "write":
        with _scratch_lock(args.scratch):
            return write(args.snapshot, args.pattern, args.scratch)
    meta = args.snapshot / "snapshot.json"
    scratch = Path(json.loads(meta.read_text())["scratch"]) if meta.is_file() else _default_scratch()
    with _scratch_lock(scratch):
        return check(args.snapshot, args.pattern, args.expect_change)


if __name__ == "__main__":
    sys.exit(main())
