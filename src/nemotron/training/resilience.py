"""The training side of a resilient Slurm job (:mod:`nemo_runspec.slurm.resilience` is the batch side).

On when ``$NEMOTRON_RESILIENCE_DIR`` is set (the batch script exports it); every
method is a no-op otherwise. Per step a rank:

- writes its heartbeat: one ``pwrite`` of a fixed 128-byte text record
  (``step phase unix-time node rank``) at offset 0 of
  ``heartbeat/a<attempt>/rank-<R>``, a file opened once. ``phase`` tells the
  watchdog which timeout applies: ``init`` until the attempt's first step has
  finished (start-up, data, compilation), ``save`` while a checkpoint is written,
  ``eval`` while evaluating, ``between`` between two steps of a native backend
  (all four: ``startup_timeout``), ``step`` while training (``stall_timeout``),
  ``stop``/``done`` at the end and ``native`` (a backend without per-step
  progress) are never a stall;
- asks whether to stop: SIGTERM (Slurm requeues or cancels the job) or SIGUSR1
  seen by this process, or ``stop_request`` (the batch shell's trap of the
  time-limit warning) present, looked at once a second at most. The loop folds
  the answer into the loss all-reduce it does anyway, so every rank stops after
  the same step;
- rank 0 appends ``{"attempt", "step", "loss", "t"}`` to ``steps.jsonl`` and, when
  stopping, writes ``stopped-a<attempt>`` (``step signal``) after the checkpoint.

Test-only switches (environment): ``NEMOTRON_TEST_STALL=RANK:STEP`` makes that rank
hang before that step in the job's first attempt; ``NEMOTRON_TEST_STEP_DELAY=SECONDS``
sleeps that long in every step (so a test can act mid-run).
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time
from pathlib import Path

ENV_DIR = "NEMOTRON_RESILIENCE_DIR"
RECORD_BYTES = 128
#: exit code of a training process that checkpointed and stopped so that the job is requeued
EXIT_REQUEUE = 75
#: stop codes folded into the all-reduce (summed over ranks): SIGTERM wins over the warning
STOP_WARNING, STOP_TERM = 1.0, 1_000_000.0
_POLL_SECONDS = 1.0


def env_int(name: str) -> int:
    """The integer in environment variable ``name``; 0 when unset or not a number."""
    try:
        return int(os.environ.get(name) or 0)
    except ValueError:
        return 0


def attempt() -> int:
    """The Slurm attempt of this job (``$SLURM_RESTART_COUNT``, 0 for the first)."""
    return env_int("SLURM_RESTART_COUNT")


class Resilience:
    """Heartbeat, stop requests and records of one rank (disabled without a directory)."""

    def __init__(self, directory: str | os.PathLike[str] | None, rank: int = 0) -> None:
        self.dir = Path(directory) if directory else None
        self.rank = rank
        self.attempt = attempt()
        self.node = os.environ.get("SLURMD_NODENAME") or os.uname().nodename
        self._fd: int | None = None
        self._steps: int | None = None
        self._signal: str | None = None
        self._next_poll = 0.0
        self._stall_at = self._test_stall()
        self._delay = float(os.environ.get("NEMOTRON_TEST_STEP_DELAY") or 0)
        if self.dir is None:
            return
        beats = self.dir / "heartbeat" / f"a{self.attempt}"
        beats.mkdir(parents=True, exist_ok=True)
        self._fd = os.open(beats / f"rank-{rank}", os.O_RDWR | os.O_CREAT, 0o644)
        if rank == 0:
            self._steps = os.open(self.dir / "steps.jsonl", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGTERM, signal.SIGUSR1):
                signal.signal(sig, self._on_signal)

    @classmethod
    def from_env(cls, rank: int = 0) -> Resilience:
        """The rank's instance for ``$NEMOTRON_RESILIENCE_DIR`` (disabled when unset)."""
        return cls(os.environ.get(ENV_DIR) or None, rank)

    @property
    def enabled(self) -> bool:
        """True inside a job with resilience on."""
        return self._fd is not None

    def _test_stall(self) -> int | None:
        spec = os.environ.get("NEMOTRON_TEST_STALL") or ""
        rank, _, step = spec.partition(":")
        if not spec or self.attempt != 0 or not rank.isdigit() or not step.isdigit():
            return None
        return int(step) if int(rank) == self.rank else None

    def _on_signal(self, signum: int, _frame: object) -> None:
        name = signal.Signals(signum).name.removeprefix("SIG")
        if self._signal != "TERM":
            self._signal = name

    def beat(self, step: int, phase: str) -> None:
        """Overwrite this rank's heartbeat record (one ``pwrite``)."""
        if self._fd is None:
            return
        text = f"{step} {phase} {time.time():.3f} {self.node} {self.rank}"
        os.pwrite(self._fd, text.encode().ljust(RECORD_BYTES - 1)[:RECORD_BYTES - 1] + b"\n", 0)

    def before_step(self, step: int, *, first: bool) -> None:
        """Start of step ``step`` (1-based): the test switches, then the heartbeat."""
        if self._stall_at is not None and step == self._stall_at:
            print(f"[test] rank {self.rank} on {self.node} hangs before step {step} (NEMOTRON_TEST_STALL)",
                  file=sys.stderr, flush=True)
            while True:
                time.sleep(3600)
        if self._delay:
            time.sleep(self._delay)
        self.beat(step, "init" if first else "step")

    def stop_code(self) -> float:
        """This rank's stop request as a number to sum over ranks (0: none)."""
        if self._fd is None:
            return 0.0
        if self._signal is None and self.dir is not None and time.monotonic() >= self._next_poll:
            self._next_poll = time.monotonic() + _POLL_SECONDS
            request = self.dir / "stop_request"
            if request.exists():
                self._signal = (request.read_text().strip() or "USR1")
        if self._signal is None:
            return 0.0
        return STOP_TERM if self._signal == "TERM" else STOP_WARNING

    def log_step(self, step: int, loss: float) -> None:
        """Rank 0: one line of ``steps.jsonl`` (attempt, step, exact loss, time)."""
        if self._steps is None:
            return
        line = json.dumps({"attempt": self.attempt, "step": step, "loss": loss, "t": time.time()})
        os.write(self._steps, (line + "\n").encode())

    def stopped(self, step: int, total: float) -> None:
        """After the stop checkpoint: the ``stopped`` marker (rank 0) and the heartbeat."""
        why = "TERM" if total >= STOP_TERM else (self._signal if self._signal not in (None, "TERM") else "USR1")
        self.mark_stopped(step, why)

    def mark_stopped(self, step: int, why: str) -> None:
        """Training stopped after checkpointing ``step`` because of signal ``why`` (``USR1``: the
        time-limit warning, ``TERM``): heartbeat ``stop``; rank 0 writes ``stopped-a<attempt>``,
        which the batch helper reads to requeue."""
        self.beat(step, "stop")
        if self._fd is None or self.rank != 0 or self.dir is None:
            return
        (self.dir / f"stopped-a{self.attempt}").write_text(f"{step} {why}\n")

    def close(self, step: int) -> None:
        """End of training: the heartbeat says ``done``."""
        self.beat(step, "done")
        for fd in (self._fd, self._steps):
            if fd is not None:
                os.close(fd)
        self._fd = self._steps = None
