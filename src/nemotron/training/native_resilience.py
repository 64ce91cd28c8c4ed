"""Resilience for the native backends (Megatron-Bridge, NeMo-RL) inside a resilient Slurm job.

The fallback trainer writes its heartbeat and its ``stopped`` marker itself
(:mod:`nemotron.training.resilience`). The native backends run their own loops, so
this module hooks them from outside, through their public per-step calls:

- **Heartbeat.** Megatron-Bridge's ``pretrain(..., callbacks=)`` fires
  ``on_train_step_start``/``on_train_step_end``: the rank beats ``init`` (first
  step) or ``step`` at a step's start and ``between`` at its end, so logging,
  evaluation and checkpoint writes between two steps get ``startup_timeout``, and
  the step itself ``stall_timeout``. NeMo-RL's GRPO loop logs metrics through its
  ``Logger.log_metrics`` at least once per step: every call is a ``step`` beat.
  An entry point without such a hook (Megatron-Bridge 0.3.1's ``finetune`` takes no
  callbacks) beats ``native`` once, a phase the watchdog never ends.
- **Stopping early means requeue.** Both libraries end on their own before the time
  limit (``train.exit_duration_in_mins``, ``checkpoint_must_save_by``) or, for
  Megatron-Bridge, on SIGTERM, after saving a checkpoint, and then exit 0: the
  batch helper would read that as completion. Megatron-Bridge 0.3.1 stops early by
  ``sys.exit`` (``train.py``: signal, duration or ``exit_interval``) and returns
  normally when ``train_iters`` are done; NeMo-RL v0.4.0's ``grpo_train`` returns in
  both cases, and its save state (saved at the last step too) says which.
  On an early stop rank 0 writes ``stopped-a<attempt>`` and every rank exits
  :data:`~nemotron.training.resilience.EXIT_REQUEUE`, so the job is requeued and
  resumes from that checkpoint.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Mapping
from typing import Any

from .resilience import ENV_DIR, EXIT_REQUEUE, Resilience, env_int

#: seconds into the attempt after which the backends' own timers stop training (set by the batch side)
ENV_EXIT_AFTER = "NEMOTRON_RESILIENCE_EXIT_AFTER"


def rank_from_env() -> int:
    """This process's global rank (torchrun's ``RANK``; 0 for a single process)."""
    return env_int("RANK")


class NativeResilience:
    """Heartbeats and the early-stop rule of one native-backend process (no-ops when disabled)."""

    def __init__(self, res: Resilience, *, exit_after: int | None = None) -> None:
        self.res = res
        self.exit_after = exit_after
        self.started = time.time()
        self.step = 0
        self._first = True

    @classmethod
    def from_env(cls) -> NativeResilience:
        """The instance for ``$NEMOTRON_RESILIENCE_DIR`` and this process's rank."""
        after = os.environ.get(ENV_EXIT_AFTER, "")
        return cls(Resilience(os.environ.get(ENV_DIR) or None, rank_from_env()),
                   exit_after=int(after) if after.isdigit() else None)

    @property
    def enabled(self) -> bool:
        """True inside a job with ``[resilience]``."""
        return self.res.enabled

    def step_start(self, step: int) -> None:
        """Step ``step`` (1-based) begins."""
        self.res.beat(step, "init" if self._first else "step")

    def step_end(self, step: int) -> None:
        """Step ``step`` is done; until the next one: logging, evaluation, checkpoints."""
        self._first = False
        self.step = step
        self.res.beat(step, "between")

    def progress(self, step: int) -> None:
        """Any sign of progress at ``step`` (a metrics call of NeMo-RL's loop)."""
        self._first = False
        self.step = max(self.step, step)
        self.res.beat(self.step, "step")

    def unwatched(self, what: str) -> None:
        """``what`` reports no per-step progress: beat a phase the watchdog never ends."""
        if not self.enabled:
            return
        self.res.beat(0, "native")
        print(f"nemotron: {what} reports no per-step progress: resilience.stall_timeout does not apply "
              "to this attempt (time limit, preemption and node failures still do)", file=sys.stderr, flush=True)

    def megatron_callbacks(self, manager_cls: Callable[[], Any]) -> Any:
        """A Megatron-Bridge ``CallbackManager`` (``manager_cls``) that beats per step."""
        manager = manager_cls()
        manager.register("on_train_step_start", lambda ctx: self.step_start(ctx.state.train_state.step + 1))
        manager.register("on_train_step_end", lambda ctx: self.step_end(ctx.state.train_state.step + 1))
        return manager

    def watch_logger(self, logger: Any) -> None:
        """Beat on every ``logger.log_metrics(metrics, step, ...)`` call (NeMo-RL's per-step call)."""
        original = logger.log_metrics

        def log_metrics(metrics: Any, step: int, *args: Any, **kwargs: Any) -> Any:
            out = original(metrics, step, *args, **kwargs)
            if isinstance(step, int):
                self.progress(step)
            return out

        logger.log_metrics = log_metrics

    def why_stopped(self) -> str:
        """The signal name the batch helper reads: the warning (``USR1``) when the batch shell
        relayed it or the backend's own timer ran out, else ``TERM`` (preemption, cancel)."""
        if self.res.dir is not None:
            request = self.res.dir / "stop_request"
            if request.exists():
                return request.read_text().strip() or "USR1"
        if self.exit_after is not None and time.time() - self.started >= (self.exit_after // 60) * 60:
            return "USR1"
        return "TERM"

    def finished(self) -> int:
        """Training ran to its end: the heartbeat says ``done``; exit code 0."""
        self.res.close(self.step)
        return 0

    def stopped_early(self, step: int | None = None) -> int:
        """The backend saved and stopped before its end: record it (rank 0) and ask for the requeue."""
        step = self.step if step is None else step
        self.res.mark_stopped(step, self.why_stopped())
        print(f"nemotron: training stopped at step {step} before its end (checkpoint saved); "
              f"exit {EXIT_REQUEUE} so the job is requeued", file=sys.stderr, flush=True)
        return EXIT_REQUEUE


def grpo_finished(state: Mapping[str, Any], grpo: Mapping[str, Any], batches: int | None, *,
                  asynchronous: bool) -> bool:
    """Whether NeMo-RL's GRPO ran to its end, from the save state it wrote at its last save
    (``grpo_train`` saves at its last step; ``batches``: the dataloader's length per epoch)."""
    max_steps = int(grpo.get("max_num_steps") or 0)
    if asynchronous:
        return int(state.get("current_step") or 0) >= max_steps
    if int(state.get("total_steps") or 0) >= max_steps:
        return True
    epochs = int(grpo.get("max_num_epochs") or 1)
    return (batches is not None and int(state.get("current_epoch") or 0) + 1 >= epochs
            and int(state.get("current_step") or 0) >= batches)
