"""Run shard functions as Ray tasks with resume (done-markers) and progress reporting.

A shard function has the signature ``fn(shard, params, out_dir) -> dict`` and must
write its outputs under temporary names and rename them into place. The returned
dict must contain ``outputs`` (file names relative to ``out_dir``) and may carry
``records``, ``tokens`` and ``bad``. After it returns, the wrapper writes
``<out_dir>/.done/<shard>.json`` holding the shard fingerprint and the result; a
rerun with the same fingerprint and all outputs present reuses the result
without reading the inputs again. Markers of shards that are not in the current
plan (an older run cut into more shards) are removed by the caller once every
shard is done, from what the output dir's manifest lists
(:meth:`nemotron.data_prep.common.Plan.settle`).
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from nemo_runspec.errors import ConfigError, ExecutionError, NemoRunspecError

from .report import write_json
from .sharding import Shard

ShardFn = Callable[[Shard, dict, str], dict]
DONE_DIR = ".done"


def marker_path(out_dir: str | Path, shard: Shard) -> Path:
    """Where the done-marker of ``shard`` lives."""
    return Path(out_dir) / DONE_DIR / f"{shard.name}.json"


def load_done(out_dir: str | Path, shard: Shard, fingerprint: str) -> dict | None:
    """The stored result of a finished shard whose fingerprint matches and outputs exist, else None."""
    path = marker_path(out_dir, shard)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if data.get("fingerprint") != fingerprint:
        return None
    result = data.get("result") or {}
    if not all((Path(out_dir) / o).exists() for o in result.get("outputs", [])):
        return None
    return result


def run_shard(fn: ShardFn, shard: Shard, params: dict, out_dir: str, fingerprint: str) -> dict:
    """Run ``fn`` on one shard and write its done-marker (this is what each Ray task executes)."""
    t0 = time.perf_counter()
    result = fn(shard, params, out_dir)
    result["seconds"] = round(time.perf_counter() - t0, 3)
    marker = marker_path(out_dir, shard)
    marker.parent.mkdir(parents=True, exist_ok=True)
    write_json(marker, {"fingerprint": fingerprint, "shard": shard.index, "result": result})
    return result


def init_ray(workers: int | None) -> bool:
    """Connect to Ray: the cluster in ``$RAY_ADDRESS`` if set, else start a local instance.

    Returns True if this call started Ray (the caller then shuts it down).
    """
    os.environ.setdefault("RAY_DISABLE_USAGE_STATS", "1")
    import ray

    if ray.is_initialized():
        return False
    src = str(Path(__file__).resolve().parents[2])
    pythonpath = os.pathsep.join(p for p in (src, os.environ.get("PYTHONPATH", "")) if p)
    # One task = one core: keep the tokenizers' rayon pool from oversubscribing.
    runtime_env = {"env_vars": {"PYTHONPATH": pythonpath, "RAY_DISABLE_USAGE_STATS": "1", "RAYON_NUM_THREADS": "1"}}
    address = os.environ.get("RAY_ADDRESS")
    if address:
        ray.init(address=address, runtime_env=runtime_env, log_to_driver=True)
    else:
        # address="local": always start our own instance, never attach to a Ray
        # head some other process left running on this machine.
        ray.init(
            address="local",
            num_cpus=workers or os.cpu_count() or 1,
            include_dashboard=False,
            runtime_env=runtime_env,
            log_to_driver=True,
        )
    return True


class Progress:
    """Shards done/total, records and tokens/s: a rich bar on a TTY, plain lines otherwise."""

    def __init__(self, label: str, total: int, *, stream: Any = None, interval: float = 5.0) -> None:
        self.label = label
        self.total = total
        self.stream = stream or sys.stdout
        self.done = 0
        self.records = 0
        self.tokens = 0
        self.t0 = time.perf_counter()
        self._last_print = 0.0
        self.interval = interval
        self._bar: Any = None
        # A live bar only on an interactive terminal; batch logs (Slurm, CI) get plain lines.
        interactive = getattr(self.stream, "isatty", lambda: False)() and not os.environ.get("SLURM_JOB_ID")
        if interactive and os.environ.get("TERM", "dumb") != "dumb":
            from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn
            from rich.progress import Progress as RichProgress

            self._bar = RichProgress(
                TextColumn(f"[bold]{label}[/]"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.fields[info]}"),
                TimeElapsedColumn(), transient=False,
            )
            self._task = self._bar.add_task(label, total=total, info="")
            self._bar.start()

    def line(self) -> str:
        """One status line."""
        dt = max(time.perf_counter() - self.t0, 1e-9)
        line = f"[{self.label}] shards {self.done}/{self.total} | records {self.records:,}"
        if self.tokens:
            line += f" | tokens {self.tokens:,} | {self.tokens / dt:,.0f} tok/s"
        return line

    def update(self, result: dict, *, resumed: bool = False) -> None:
        """Count one finished (or resumed) shard."""
        self.done += 1
        self.records += int(result.get("records", 0))
        self.tokens += int(result.get("tokens", 0))
        if self._bar is not None:
            dt = max(time.perf_counter() - self.t0, 1e-9)
            self._bar.update(self._task, completed=self.done, info=f"{self.records:,} rec  {self.tokens / dt:,.0f} tok/s")
            return
        now = time.perf_counter()
        if resumed:
            return
        if self.done == self.total or now - self._last_print >= self.interval or self.done == 1:
            self._last_print = now
            print(self.line(), file=self.stream, flush=True)

    def close(self) -> None:
        """Stop the bar (if any)."""
        if self._bar is not None:
            self._bar.stop()


#: Below this much input (bytes), a local run without ``workers`` runs in this process:
#: starting Ray costs ~5 s here, about what one core needs to tokenize 20 MB
#: (bench/bench_tokenize.py). ``$NEMOTRON_DATA_PREP_IN_PROCESS_BYTES`` changes it (0: always Ray).
IN_PROCESS_BYTES = 16 * 1024 * 1024


def input_bytes(shards: list[Shard]) -> int:
    """Bytes of the distinct input files the shards read."""
    files = {seg.url: seg.size for shard in shards for seg in shard.segments}
    return sum(int(size or 0) for size in files.values())


def choose_in_process(shards: list[Shard], workers: int | None) -> bool:
    """Run without Ray? ``workers=0`` always; never inside a Ray cluster (``$RAY_ADDRESS``,
    as in a Slurm Ray job, or Ray already started by this process); otherwise when the
    input is below :data:`IN_PROCESS_BYTES`, whatever ``workers`` says (starting Ray
    would cost more than the work). The output is the same bytes either way."""
    if workers == 0:
        return True
    if os.environ.get("RAY_ADDRESS") or _ray_running():
        return False
    return input_bytes(shards) < _limit()


def _limit() -> int:
    value = os.environ.get("NEMOTRON_DATA_PREP_IN_PROCESS_BYTES", "").strip()
    if not value:
        return IN_PROCESS_BYTES
    try:
        return max(0, int(value))
    except ValueError:
        raise ConfigError(f"NEMOTRON_DATA_PREP_IN_PROCESS_BYTES must be a number of bytes, got {value!r}") from None


def _ray_running() -> bool:
    ray = sys.modules.get("ray")
    return bool(ray is not None and getattr(ray, "is_initialized", lambda: False)())


def run_shards(
    fn: ShardFn,
    shards: list[Shard],
    params: dict,
    out_dir: str | Path,
    *,
    workers: int | None = None,
    label: str = "data-prep",
    on_shard_done: Callable[[Shard, dict], None] | None = None,
    stream: Any = None,
) -> list[dict]:
    """Run ``fn`` over ``shards`` (resuming finished ones) and return results in shard order.

    In this process without Ray when :func:`choose_in_process` says so (``workers=0``,
    or a small local input with ``workers`` unset); otherwise each shard is a
    ``ray.remote`` task and at most ``workers`` run at once (default: all CPUs of
    the Ray cluster). ``on_shard_done(shard, result)`` is called in the driver
    after each shard finishes, in completion order.
    """
    out = str(out_dir)
    Path(out, DONE_DIR).mkdir(parents=True, exist_ok=True)
    results: dict[int, dict] = {}
    todo: list[tuple[Shard, str]] = []
    progress = Progress(label, len(shards), stream=stream)
    fps = {s.index: s.fingerprint(params) for s in shards}
    for s in shards:
        prev = load_done(out, s, fps[s.index])
        if prev is not None:
            results[s.index] = prev
            progress.update(prev, resumed=True)
        else:
            todo.append((s, fps[s.index]))
    if len(todo) < len(shards):
        print(f"[{label}] resuming: {len(shards) - len(todo)} of {len(shards)} shards already done", file=progress.stream, flush=True)
    in_process = choose_in_process(shards, workers)
    if in_process and workers != 0 and todo:
        print(f"[{label}] {input_bytes(shards) / 1e6:.2f} MB of input: running in this process, without Ray "
              f"(below NEMOTRON_DATA_PREP_IN_PROCESS_BYTES={_limit()}; 0 always starts Ray)",
              file=progress.stream, flush=True)
    try:
        if in_process:
            for s, fp in todo:
                results[s.index] = run_shard(fn, s, params, out, fp)
                progress.update(results[s.index])
                if on_shard_done:
                    on_shard_done(s, results[s.index])
        elif todo:
            _run_ray(fn, todo, params, out, workers, results, progress, on_shard_done)
    finally:
        progress.close()
    return [results[s.index] for s in shards]


def _run_ray(fn, todo, params, out, workers, results, progress, on_shard_done) -> None:
    started = init_ray(workers)
    import ray

    try:
        remote = ray.remote(num_cpus=1, max_retries=0)(run_shard)
        limit = workers or max(int(ray.cluster_resources().get("CPU", 1)), 1)
        fn_ref = ray.put(fn)
        params_ref = ray.put(params)
        pending: dict[Any, Shard] = {}
        queue = list(todo)
        try:
            _drain(ray, remote, fn_ref, params_ref, out, queue, pending, limit, results, progress, on_shard_done)
        except BaseException:
            for r in pending:
                ray.cancel(r, force=True)
            raise
    finally:
        if started:
            ray.shutdown()


def _drain(ray, remote, fn_ref, params_ref, out, queue, pending, limit, results, progress, on_shard_done) -> None:
    """Submit shards up to ``limit`` at a time and collect them as they finish."""
    while queue or pending:
        while queue and len(pending) < limit:
            s, fp = queue.pop(0)
            pending[remote.remote(fn_ref, s, params_ref, out, fp)] = s
        ready, _ = ray.wait(list(pending), num_returns=1)
        for ref in ready:
            s = pending.pop(ref)
            try:
                results[s.index] = ray.get(ref)
            except ray.exceptions.RayTaskError as exc:
                for r in pending:
                    ray.cancel(r)
                cause = getattr(exc, "cause", None)
                if isinstance(cause, NemoRunspecError | OSError):  # one line naming the file, as in-process
                    raise cause from None
                raise ExecutionError(f"{s.name} failed: {cause or exc}") from exc
            progress.update(results[s.index])
            if on_shard_done:
                on_shard_done(s, results[s.index])
