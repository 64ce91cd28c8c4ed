"""Run shard functions with resume (done-markers) and progress reporting.

Three ways to run the same shard function on the same shards, with the same
output bytes (:func:`choose_mode`): in this process (small inputs), a pool of
forked worker processes (larger local runs: no Ray start-up, no Ray daemons),
or Ray tasks (on a Ray cluster: ``$RAY_ADDRESS``, as in the Slurm Ray job).

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

import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from nemo_runspec.errors import ConfigError, ExecutionError, NemoRunspecError

from .shard_markers import DONE_DIR, ShardFn, load_done, marker_path, run_shard  # noqa: F401 - runner's names too
from .sharding import Shard


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


#: Below this much input (bytes), a local run runs in this process. The worker pool
#: costs a few tens of ms to fork and feed, so two workers beat one process from
#: ~0.7 MB of pretrain input on 2 cores (bench/bench_tokenize.py, "threshold":
#: 0.5 MB 0.17 s in process vs 0.20 s pooled, 1 MB 0.33 vs 0.25 s, 8 MB 2.3 vs 1.2 s).
#: ``$NEMOTRON_DATA_PREP_IN_PROCESS_BYTES`` changes it (0: never in this process).
IN_PROCESS_BYTES = 1024 * 1024

#: A local pool forks at most one worker per this much input (but two at least).
POOL_BYTES_PER_WORKER = 512 * 1024

#: ``NEMOTRON_DATA_PREP_RAY=1``: a local run above the threshold starts a local Ray
#: instance instead of the process pool (what a Ray cluster runs, on one machine).
RAY_ENV = "NEMOTRON_DATA_PREP_RAY"


def input_bytes(shards: list[Shard]) -> int:
    """Bytes of the distinct input files the shards read."""
    files = {seg.url: seg.size for shard in shards for seg in shard.segments}
    return sum(int(size or 0) for size in files.values())


def choose_in_process(shards: list[Shard], workers: int | None) -> bool:
    """Run in this process? ``workers=0`` always; never inside a Ray cluster (``$RAY_ADDRESS``,
    as in a Slurm Ray job, or Ray already started by this process); otherwise when the
    input is below :data:`IN_PROCESS_BYTES`, whatever ``workers`` says (starting workers
    would cost more than the work). The output is the same bytes either way."""
    if workers == 0:
        return True
    if _in_ray_cluster():
        return False
    return input_bytes(shards) < _limit()


def choose_mode(shards: list[Shard], workers: int | None, todo: int | None = None) -> tuple[str, int]:
    """``(mode, processes)``: how to run ``todo`` shards (default: all of them).

    * ``"ray"``: inside a Ray cluster (``$RAY_ADDRESS``, Ray already started in this
      process), or a local run with ``NEMOTRON_DATA_PREP_RAY=1`` or not on Linux;
      processes is 0 (Ray's tasks, at most ``workers`` at once).
    * ``"inline"``: :func:`choose_in_process`, or a single process would do anyway
      (``workers=1``, one shard to run, one CPU).
    * ``"pool"``: any other local run: ``min(workers or usable CPUs, todo)`` forked
      worker processes (:class:`ForkPool`), no Ray; at most one per
      :data:`POOL_BYTES_PER_WORKER` of input beyond two (a 2 MB input on a 64-core
      machine does not fork 64 workers).
    """
    if choose_in_process(shards, workers):
        return "inline", 1
    if _in_ray_cluster() or os.environ.get(RAY_ENV, "").strip() == "1":
        return "ray", 0
    n = min(workers or _usable_cpus(), len(shards) if todo is None else todo,
            max(2, -(-input_bytes(shards) // POOL_BYTES_PER_WORKER)))
    if n <= 1:
        return "inline", 1
    if not sys.platform.startswith("linux"):
        return "ray", 0  # forking is Linux-safe only (macOS system libraries start threads)
    return "pool", n


def _usable_cpus() -> int:
    try:
        return len(os.sched_getaffinity(0)) or 1
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _limit() -> int:
    value = os.environ.get("NEMOTRON_DATA_PREP_IN_PROCESS_BYTES", "").strip()
    if not value:
        return IN_PROCESS_BYTES
    try:
        return max(0, int(value))
    except ValueError:
        raise ConfigError(f"NEMOTRON_DATA_PREP_IN_PROCESS_BYTES must be a number of bytes, got {value!r}") from None


def _in_ray_cluster() -> bool:
    """Inside a Ray cluster: ``$RAY_ADDRESS`` (the Slurm Ray job) or Ray started in this process."""
    return bool(os.environ.get("RAY_ADDRESS")) or _ray_running()


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

    Where the shards run is :func:`choose_mode`'s: in this process, in a pool of
    forked worker processes, or as ``ray.remote`` tasks (at most ``workers`` at
    once; default: all CPUs of the Ray cluster). Every way calls
    :func:`run_shard` with the same arguments, so the output is the same bytes.
    ``on_shard_done(shard, result)`` is called in the driver after each shard
    finishes, in completion order.
    """
    out = str(out_dir)
    Path(out, DONE_DIR).mkdir(parents=True, exist_ok=True)
    results: dict[int, dict] = {}
    todo: list[tuple[Shard, str]] = []
    fps = {s.index: s.fingerprint(params) for s in shards}
    for s in shards:
        prev = load_done(out, s, fps[s.index])
        if prev is not None:
            results[s.index] = prev
        else:
            todo.append((s, fps[s.index]))
    mode, procs = choose_mode(shards, workers, len(todo)) if todo else ("inline", 1)
    # The pool forks before anything else starts a thread here (the progress bar's).
    pool = ForkPool(procs, fn, params, out) if mode == "pool" else None
    try:
        progress = Progress(label, len(shards), stream=stream)
        for s in shards:
            if s.index in results:
                progress.update(results[s.index], resumed=True)
        if len(todo) < len(shards):
            print(f"[{label}] resuming: {len(shards) - len(todo)} of {len(shards)} shards already done",
                  file=progress.stream, flush=True)
        if todo and mode != "ray" and workers != 0:  # workers=0 asked for this process
            mb = input_bytes(shards) / 1e6
            if pool is not None:
                how = (f"{procs} worker processes on this machine, without Ray "
                       f"({RAY_ENV}=1 starts a local Ray instance instead)")
            elif choose_in_process(shards, workers):
                how = (f"running in this process, without Ray (below NEMOTRON_DATA_PREP_IN_PROCESS_BYTES="
                       f"{_limit()}; 0 never runs in this process)")
            else:
                how = "running in this process, without Ray (one worker would do)"
            print(f"[{label}] {mb:.2f} MB of input: {how}", file=progress.stream, flush=True)
        try:
            if pool is not None:
                pool.run(todo, results, progress, on_shard_done)
            elif mode == "inline":
                for s, fp in todo:
                    results[s.index] = run_shard(fn, s, params, out, fp)
                    progress.update(results[s.index])
                    if on_shard_done:
                        on_shard_done(s, results[s.index])
            elif todo:
                _run_ray(fn, todo, params, out, workers, results, progress, on_shard_done)
        finally:
            progress.close()
    finally:
        if pool is not None:
            pool.close()
    return [results[s.index] for s in shards]


class ForkPool:
    """``processes`` forked workers that each run :func:`run_shard` for the shards they are sent.

    Forked, so ``fn``, ``params`` (with the serialized tokenizer) and the loaded
    tokenizer are inherited instead of pickled to each worker, and their pages
    are shared until written; a shard is handed to whichever worker is free (as
    Ray does), each result comes back over the worker's pipe. A worker runs
    :func:`run_shard` exactly as a Ray task does, so the files are the same bytes.

    A failing shard stops the run with its exception (a :class:`NemoRunspecError`
    or ``OSError`` as it is, anything else as an :class:`ExecutionError` naming
    the shard), like the Ray path; a worker that dies (OOM killer, a signal) is
    an :class:`ExecutionError` naming its shard. :meth:`close` stops every
    worker (SIGTERM: a shard in progress removes its temporary files; SIGKILL
    after a grace period), and on Linux a worker is killed when the driver dies.
    """

    def __init__(self, processes: int, fn: ShardFn, params: dict, out: str, *, grace: float = 5.0) -> None:
        import multiprocessing

        ctx = multiprocessing.get_context("fork")
        self.grace = grace
        self.conns: list[Any] = []
        self.procs: list[Any] = []
        parent_ends: list[Any] = []
        try:
            for _ in range(processes):
                mine, theirs = ctx.Pipe()
                proc = ctx.Process(target=_pool_worker, args=(theirs, [*parent_ends, mine], os.getpid(), fn, params, out),
                                   daemon=True, name="data-prep-worker")
                proc.start()
                theirs.close()
                parent_ends.append(mine)
                self.conns.append(mine)
                self.procs.append(proc)
        except BaseException:
            self.close()
            raise

    def run(self, todo: list[tuple[Shard, str]], results: dict[int, dict], progress: Progress,
            on_shard_done: Callable[[Shard, dict], None] | None) -> None:
        """Run ``todo`` on the workers, filling ``results`` as shards finish."""
        from multiprocessing.connection import wait

        queue = list(todo)
        idle = list(range(len(self.procs)))
        busy: dict[int, Shard] = {}
        while queue or busy:
            while queue and idle:
                w = idle.pop()
                s, fp = queue.pop(0)
                self.conns[w].send((s, fp))
                busy[w] = s
            by_handle = {self.conns[w]: w for w in busy} | {self.procs[w].sentinel: w for w in busy}
            for handle in wait(list(by_handle)):
                w = by_handle[handle]
                if w not in busy:
                    continue  # its pipe and its sentinel were both ready
                s = busy[w]
                try:
                    ok, payload = self.conns[w].recv()
                except (EOFError, OSError):
                    code = self.procs[w].join(1) or self.procs[w].exitcode
                    how = f"killed by signal {-code}" if isinstance(code, int) and code < 0 else f"exit code {code}"
                    raise ExecutionError(f"{s.name} failed: its worker process died ({how})") from None
                del busy[w]
                if not ok:
                    if isinstance(payload, NemoRunspecError | OSError):
                        raise payload  # one line naming the file, as in-process
                    raise ExecutionError(f"{s.name} failed: {payload}") from (
                        payload if isinstance(payload, BaseException) else None)
                results[s.index] = payload
                idle.append(w)
                progress.update(payload)
                if on_shard_done:
                    on_shard_done(s, payload)

    def close(self) -> None:
        """Stop the workers: an idle one exits on end of input, a busy one on SIGTERM."""
        import signal

        for conn in self.conns:
            try:
                conn.close()
            except OSError:
                pass
        deadline = time.monotonic() + 0.5
        for proc in self.procs:
            proc.join(max(deadline - time.monotonic(), 0))
        alive = [p for p in self.procs if p.is_alive()]
        for proc in alive:
            try:
                os.kill(proc.pid, signal.SIGTERM)
            except OSError:
                pass
        deadline = time.monotonic() + self.grace
        for proc in alive:
            proc.join(max(deadline - time.monotonic(), 0))
            if proc.is_alive():
                proc.kill()
                proc.join()
        self.procs, self.conns = [], []


def _pool_worker(conn: Any, close: list[Any], parent: int, fn: ShardFn, params: dict, out: str) -> None:
    """One :class:`ForkPool` worker: run the shards sent on ``conn`` until it is closed."""
    import pickle
    import signal

    for c in close:  # the driver's ends: the driver's exit must close this pipe
        c.close()
    _die_with_parent(parent)
    os.environ["RAYON_NUM_THREADS"] = "1"  # one core per worker, as a Ray task

    def interrupted(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, interrupted)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the driver's to handle: it closes the pool
    while True:
        try:
            shard, fp = conn.recv()
        except (EOFError, OSError, KeyboardInterrupt):
            return
        try:
            reply = (True, run_shard(fn, shard, params, out, fp))
        except KeyboardInterrupt:
            return
        except BaseException as exc:  # noqa: BLE001 - reported to the driver, which stops the run
            try:
                pickle.loads(pickle.dumps(exc))
                reply = (False, exc)
            except Exception:  # noqa: BLE001 - an exception that does not pickle goes as text
                reply = (False, f"{type(exc).__name__}: {exc}")
        try:
            conn.send(reply)
        except (OSError, KeyboardInterrupt):
            return


def _die_with_parent(parent: int) -> None:
    """Linux: SIGKILL this process when the driver dies (a killed driver leaves no worker behind)."""
    import signal

    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass
    if os.getppid() != parent:  # the driver died before the line above
        os._exit(1)


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
