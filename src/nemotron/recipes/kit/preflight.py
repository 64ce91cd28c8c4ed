# /// script
# [tool.runspec]
# schema = "1"
# name = "kit/preflight"
# docs = "Checks a profile before anyone spends GPU-hours on it: rendezvous, all-reduce, GPUs, memory, mounts, env."
#
# [tool.runspec.run]
# launch = "torchrun"
#
# [tool.runspec.config]
# dir = "./config/preflight"
# default = "default"
#
# [tool.runspec.resources]
# nodes = 1
# gpus_per_node = 0
# ///
"""Preflight: prove that a profile's nodes can train together, before a real job does.

Every rank joins one process group (NCCL with GPUs, gloo without), runs an
all-reduce whose answer is known, and checks its node: GPU visibility, free GPU
and host memory, that the job dir and every configured path is readable and
writable, and that required environment variables are present (their values are
never printed). Each rank also reads the versions of the training libraries its
Python can import (Megatron-Bridge, Megatron Core, NeMo-RL, NeMo Evaluator and its
launcher: their ``package_info.py`` or distribution metadata, nothing imported), so the
report says what the profile's image carries on every node, and, where the
``nemotron`` package is importable, what the compatibility table says that image
should carry (a difference is a note, not a failure: a profile may serve the CPU
fallback only). Rank 0 gathers every report, prints a per-node table, writes
``preflight.json`` and everyone exits non-zero if anything failed. The verdict
ends with the outcome line (``nemotron-outcome: {...}``, docs/execution.md).

Exit codes: 0 when every check passed on every rank; 1 on *every* rank when any
check failed anywhere (a check that raises is a failure of its rank, not a
crash); 2 for an unreadable config. Once the verdict is known a rank exits
with it even when its launcher stops it with SIGTERM (torchrun and srun
terminate the remaining ranks as soon as one exits), so a failed preflight is
exit 1 on every node, never 15.

Run under torchrun (``nemotron kit preflight`` does that) or, for a single
process, plainly: ``python preflight.py --config config/preflight/default.yaml``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import socket
import sys
import tempfile
import time
from pathlib import Path
from typing import Any


def _load_config(path: str | None) -> dict[str, Any]:
    """The ``preflight`` section, plus what the profile implies must work.

    Every mount of the profile (``run.env.mounts``: the container side when the
    job has an image, else the host side) is checked readable and writable, and
    every env var the profile sets (``run.env.env_vars``) must be present.
    """
    if not path:
        return {}
    # Plain PyYAML on purpose: preflight stays self-contained (stdlib + PyYAML)
    # so it ships alone and runs on a node before the project is installed.
    # The CLI has already merged the config into train.yaml.
    import yaml

    data = yaml.safe_load(Path(path).read_text(encoding="utf-8")) or {}
    if not isinstance(data, dict):
        raise ValueError(f"the config must be a mapping, not a {type(data).__name__}")
    cfg = dict(data.get("preflight", data) or {})
    run_env = ((data.get("run") or {}).get("env") or {}) if isinstance(data, dict) else {}
    image = run_env.get("container_image")
    in_container = bool(image) and str(image).strip().lower() not in ("none", "null")
    cfg["image"] = str(image) if in_container else None
    for mount in run_env.get("mounts") or []:
        parts = str(mount).split(":")
        target = parts[1] if in_container and len(parts) > 1 else parts[0]
        cfg.setdefault("paths", [])
        if target not in cfg["paths"]:
            cfg["paths"] = [*cfg["paths"], target]
    for name in run_env.get("env_vars") or {}:
        if name not in (cfg.get("require_env") or []):
            cfg["require_env"] = [*(cfg.get("require_env") or []), name]
    return cfg


#: distribution -> module of the libraries the nano3 stages run natively
LIBRARIES = {"megatron-bridge": "megatron.bridge", "megatron-core": "megatron.core", "nemo-rl": "nemo_rl",
             "nemo-evaluator": "nemo_evaluator", "nemo-evaluator-launcher": "nemo_evaluator_launcher"}


def _library_version(dist: str, module: str) -> str | None:
    """The version of ``module`` importable here, read from its ``package_info.py`` (or the
    distribution metadata) without importing it; None when it is not importable."""
    import ast
    import importlib.metadata
    import importlib.util

    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return None
    if spec is None:
        return None
    for location in spec.submodule_search_locations or ():
        info = Path(location) / "package_info.py"
        try:
            tree = ast.parse(info.read_text(encoding="utf-8"))
        except (OSError, SyntaxError, UnicodeDecodeError):
            continue
        consts = {t.id: n.value.value for n in tree.body if isinstance(n, ast.Assign)
                  and isinstance(n.value, ast.Constant) for t in n.targets if isinstance(t, ast.Name)}
        if "MAJOR" in consts:
            return f"{consts['MAJOR']}.{consts.get('MINOR', 0)}.{consts.get('PATCH', 0)}{consts.get('PRE_RELEASE') or ''}"
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def _libraries() -> dict[str, str | None]:
    """``{distribution: version or None}`` for :data:`LIBRARIES`."""
    return {dist: _library_version(dist, module) for dist, module in LIBRARIES.items()}


def _table_versions(image: str | None) -> dict[str, str] | None:
    """What the compatibility table says ``image`` carries, when ``nemotron`` is importable here."""
    if not image:
        return None
    try:
        from nemotron.training.versions import row_for
    except ImportError:  # preflight shipped alone: no table to compare with
        return None
    row = row_for(image)
    return dict(row.versions) if row is not None else {}


def _library_lines(reports: list[dict[str, Any]], image: str | None) -> list[str]:
    """One line per node: the versions found (or that none of them is there), and where they
    differ from what the table says the image carries."""
    expected = _table_versions(image)
    lines = [f"libraries (image {image or 'none: bare metal'}):"]
    seen: dict[str, dict[str, str | None]] = {}
    for r in reports:
        seen.setdefault(str(r["node"]), r.get("libraries") or {})
    for node, libs in seen.items():
        found = {d: v for d, v in libs.items() if v}
        if found:
            lines.append(f"  {node}: " + ", ".join(f"{d} {v}" for d, v in found.items()))
        else:
            lines.append(f"  {node}: none of {', '.join(LIBRARIES)}: the native backends cannot run "
                         f"here (the CPU fallback can)")
        for dist, want in (expected or {}).items():
            have = libs.get(dist)
            if (have or "").split("+")[0] != want:
                lines.append(f"  note: {node}: the compatibility table says {image} has {dist} {want}, "
                             f"found {have or 'none'}")
    if expected == {}:
        lines.append(f"  note: {image} is not in the compatibility table (nemotron.training.versions)")
    return lines


def _host_memory_gib() -> tuple[float, float]:
    info: dict[str, int] = {}
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            key, value = line.split(":", 1)
            info[key] = int(value.split()[0]) * 1024
    except OSError:
        return 0.0, 0.0
    gib = 1024**3
    return info.get("MemTotal", 0) / gib, info.get("MemAvailable", 0) / gib


def _gpu_report(torch) -> dict[str, Any]:
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if not torch.cuda.is_available():
        return {"cuda": False, "visible_devices": visible, "count": 0, "devices": []}
    devices = []
    for i in range(torch.cuda.device_count()):
        free, total = torch.cuda.mem_get_info(i)
        devices.append({
            "index": i,
            "name": torch.cuda.get_device_name(i),
            "free_gib": round(free / 1024**3, 2),
            "total_gib": round(total / 1024**3, 2),
        })
    return {"cuda": True, "visible_devices": visible, "count": len(devices), "devices": devices}


def _check_path(path: str) -> tuple[bool, str]:
    p = Path(os.path.expandvars(os.path.expanduser(path)))
    if not p.exists():
        return False, "missing"
    if not os.access(p, os.R_OK):
        return False, "not readable"
    if p.is_dir():
        try:
            with tempfile.NamedTemporaryFile(dir=p, prefix=".preflight-", delete=True) as f:
                f.write(b"ok")
                f.flush()
                if Path(f.name).read_bytes() != b"ok":
                    return False, "write did not read back"
        except OSError as exc:
            return False, f"not writable ({exc.strerror})"
    return True, "ok"


def _check(failures: list[str], what: str, check: Any) -> Any:
    """Run one check; an exception is a failure of this rank (named), never a crash
    that leaves the other ranks waiting to be killed."""
    try:
        return check()
    except Exception as exc:  # noqa: BLE001 - reported in the table and preflight.json
        failures.append(f"{what}: {type(exc).__name__}: {' '.join(str(exc).split())}")
        return None


def _local_checks(cfg: dict[str, Any], torch) -> dict[str, Any]:
    total, available = _host_memory_gib()
    failures: list[str] = []
    empty = {"cuda": False, "visible_devices": None, "count": 0, "devices": []}
    gpu = _check(failures, "GPU report", lambda: _gpu_report(torch)) or empty

    def gpu_count() -> None:
        expected = cfg.get("expect_gpus_per_node")
        if expected is not None and gpu["count"] != int(expected):
            failures.append(f"expected {expected} GPU(s), see {gpu['count']}")

    def gpu_memory() -> None:
        min_free = cfg.get("min_free_gpu_gib")
        if min_free is not None:
            for d in gpu["devices"]:
                if d["free_gib"] < float(min_free):
                    failures.append(f"GPU {d['index']} has {d['free_gib']} GiB free < {min_free}")

    _check(failures, f"expect_gpus_per_node={cfg.get('expect_gpus_per_node')!r}", gpu_count)
    _check(failures, f"min_free_gpu_gib={cfg.get('min_free_gpu_gib')!r}", gpu_memory)
    paths: dict[str, str] = {}
    job_dir = cfg.get("job_dir") or os.environ.get("NEMOTRON_JOB_DIR") or os.getcwd()
    for path in [job_dir, *(cfg.get("paths") or [])]:
        result = _check(failures, f"path {path}", lambda p=path: _check_path(str(p)))
        if result is None:  # the check itself failed (already a failure)
            paths[str(path)] = "error"
            continue
        ok, why = result
        paths[str(path)] = why
        if not ok:
            failures.append(f"{path}: {why}")
    env: dict[str, str] = {}
    for name in cfg.get("require_env") or []:
        present = bool(os.environ.get(str(name)))
        env[str(name)] = "present" if present else "MISSING"
        if not present:
            failures.append(f"env var {name} is not set")
    libraries = _check(failures, "library versions", _libraries) or {}
    return {
        "host": socket.gethostname(),
        "node": os.environ.get("SLURMD_NODENAME") or os.environ.get("SLURM_NODEID") or socket.gethostname(),
        "libraries": libraries,
        "host_mem_total_gib": round(total, 1),
        "host_mem_free_gib": round(available, 1),
        "gpu": gpu,
        "paths": paths,
        "env": env,
        "failures": failures,
    }


def _table(reports: list[dict[str, Any]], expected_sum: float, got_sum: float, seconds: float,
           image: str | None = None) -> str:
    rows = [("rank", "node", "host", "GPUs", "GPU free GiB", "host free GiB", "paths", "env", "status")]
    for r in reports:
        gpus = r["gpu"]
        free = ",".join(str(d["free_gib"]) for d in gpus["devices"]) or "-"
        paths_ok = sum(1 for v in r["paths"].values() if v == "ok")
        env_ok = sum(1 for v in r["env"].values() if v == "present")
        rows.append((
            str(r["rank"]), str(r["node"]), r["host"], str(gpus["count"]), free,
            str(r["host_mem_free_gib"]), f"{paths_ok}/{len(r['paths'])}",
            f"{env_ok}/{len(r['env'])}", "OK" if not r["failures"] else "FAIL",
        ))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) for row in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    lines.append("")
    lines.extend(_library_lines(reports, image))
    lines.append(f"all-reduce: expected {expected_sum:g}, got {got_sum:g} ({seconds:.2f}s incl. rendezvous)")
    for r in reports:
        for f in r["failures"]:
            lines.append(f"FAIL rank {r['rank']} ({r['node']}): {f}")
    return "\n".join(lines)


def _config_problem(path: str, exc: Exception) -> str:
    """``path[:line]: problem`` for a config that cannot be read or parsed."""
    line = None
    if isinstance(exc, UnicodeDecodeError):
        line = Path(path).read_bytes().count(b"\n", 0, exc.start) + 1
    mark = getattr(exc, "problem_mark", None)
    if mark is not None:
        line = mark.line + 1
    where = f"{path}:{line}" if line else path
    if isinstance(exc, OSError) and exc.strerror:
        reason = exc.strerror
    elif isinstance(exc, UnicodeDecodeError):
        reason = f"not UTF-8 text ({exc.reason})"
    else:
        reason = " ".join(str(exc).split()) or type(exc).__name__
    return f"{where}: cannot read the preflight config: {reason}"


#: The start of the outcome line (nemo_runspec.outcome, docs/execution.md "How a job ends"). Preflight
#: ships alone (stdlib + PyYAML), so it writes the line itself, with the same keys
#: (tests/nemotron/kit/test_preflight_outcome.py reads it with nemo_runspec.outcome).
OUTCOME_MARKER = "nemotron-outcome: "


def _write_outcome(ok: bool, code: int, message: str, figures: dict[str, Any] | None = None) -> None:
    """Print the outcome line: this rank's last word on how the check ended."""
    rank = os.environ.get("RANK", "").strip()
    attempt = os.environ.get("SLURM_RESTART_COUNT", "").strip()
    record = {"v": 1, "ok": ok, "exit_code": code, "message": " ".join(message.split()), "recipe": "kit/preflight",
              "figures": figures or {}, "rank": int(rank) if rank.isdigit() else None,
              "node": os.environ.get("SLURMD_NODENAME") or socket.gethostname(),
              "attempt": int(attempt) if attempt.isdigit() else None,
              "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    try:
        sys.stderr.flush()
        print(OUTCOME_MARKER + json.dumps(record, ensure_ascii=False, separators=(", ", ": ")), flush=True)
    except (OSError, ValueError):  # stdout closed: the exit code still says it
        pass


def _error(message: str, code: int = 2) -> int:
    """Print the error ``message`` and its outcome line; return ``code``."""
    print(message, file=sys.stderr, flush=True)
    _write_outcome(False, code, message)
    return code


def _exit_now(code: int) -> None:
    """End this process with ``code`` at once: output flushed, no interpreter or
    process-group teardown (whose length differs between ranks)."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(code)


def _keep_verdict_on_sigterm(code: int) -> None:
    """From now on SIGTERM (a launcher stopping the remaining ranks once one of
    them exited) ends this rank with the verdict ``code`` instead of 15 / -15."""
    import signal

    signal.signal(signal.SIGTERM, lambda signum, frame: _exit_now(code))


def main(argv: list[str] | None = None) -> int:
    """Run the checks on this rank, agree on one verdict with every other rank, and
    return the exit code (0 passed, 1 failed somewhere, 2 unreadable config)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", help="YAML config (the CLI passes the job's train config)")
    parser.add_argument("--timeout", type=float, default=None, help="rendezvous timeout, seconds")
    args = parser.parse_args(argv)  # unknown arguments are an error, not silently ignored
    try:
        cfg = _load_config(args.config)
    except Exception as exc:  # noqa: BLE001 - the same file on every rank: each says so, exits 2
        return _error(f"error: {_config_problem(args.config, exc)}")

    import torch
    import torch.distributed as dist

    rank = int(os.environ.get("RANK", "0"))
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if "MASTER_ADDR" not in os.environ:  # plain `python preflight.py`: a group of one
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        os.environ.setdefault("MASTER_PORT", str(29500 + os.getpid() % 1000))
    backend = "nccl" if torch.cuda.is_available() else "gloo"
    if backend == "nccl":
        torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
    try:
        timeout = dt.timedelta(seconds=args.timeout or float(cfg.get("timeout_s", 300)))
    except (TypeError, ValueError):
        return _error(f"error: {args.config}: preflight.timeout_s must be a number of seconds, "
                      f"got {cfg.get('timeout_s')!r}")

    t0 = time.monotonic()
    dist.init_process_group(backend=backend, rank=rank, world_size=world, timeout=timeout)
    device = torch.device("cuda") if backend == "nccl" else torch.device("cpu")
    value = torch.tensor([float(rank + 1)], device=device)
    dist.all_reduce(value, op=dist.ReduceOp.SUM)
    expected = world * (world + 1) / 2
    got = float(value.item())
    seconds = time.monotonic() - t0

    report = _local_checks(cfg, torch)
    report.update({"rank": rank, "local_rank": int(os.environ.get("LOCAL_RANK", "0")),
                   "world_size": world, "backend": backend})
    if abs(got - expected) > 1e-6:
        report["failures"].append(f"all-reduce returned {got:g}, expected {expected:g}")

    gathered: list[Any] = [None] * world
    dist.all_gather_object(gathered, report)
    failed = any(r["failures"] for r in gathered)
    code = 1 if failed else 0
    # Every rank holds the same verdict now: whatever happens next, it exits with it.
    _keep_verdict_on_sigterm(code)
    if rank == 0:
        try:
            print(_table(gathered, expected, got, seconds, cfg.get("image")), flush=True)
            out = Path(cfg.get("report_path") or "preflight.json")
            try:
                out.write_text(json.dumps({"ok": not failed, "world_size": world, "backend": backend,
                                           "image": cfg.get("image"),
                                           "allreduce": {"expected": expected, "got": got},
                                           "ranks": gathered}, indent=2))
            except OSError:
                pass
            nodes = len({r["node"] for r in gathered})
            verdict = f"preflight {'FAILED' if failed else 'passed'}: {world} rank(s) on {nodes} node(s), backend {backend}"
            print(verdict, flush=True)
            first = next((f"rank {r['rank']} ({r['node']}): {f}" for r in gathered for f in r["failures"]), None)
            _write_outcome(not failed, code, verdict + (f"; first failure: {first}" if first else ""),
                           {"ranks": world, "nodes": nodes, "backend": backend, "allreduce_seconds": round(seconds, 3),
                            "failures": sum(len(r["failures"]) for r in gathered)})
        except OSError:  # stdout closed: the verdict still stands
            pass
    try:
        dist.barrier()  # nobody leaves before rank 0 has reported...
        dist.destroy_process_group()
    except Exception:  # noqa: BLE001 - a peer already gone (stopped by its launcher)
        pass
    return code  # ...then all leave together (see _exit_now)


def _main_reporting() -> int:
    """:func:`main`; an exception (a rendezvous that times out, a backend that fails) is
    printed as Python would, then its outcome line, and the exit code is 1."""
    try:
        return main()
    except Exception as exc:  # noqa: BLE001 - printed in full; the outcome line names it
        import traceback

        traceback.print_exc()
        _write_outcome(False, 1, " ".join(traceback.format_exception_only(type(exc), exc)[-1].split()))
        return 1


if __name__ == "__main__":
    _exit_now(_main_reporting())
