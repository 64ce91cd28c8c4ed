"""The training side of ``run.profile.nsys`` (:mod:`nemo_runspec.slurm.profiling` is the batch side).

The job runs under ``nsys profile --capture-range=cudaProfilerApi``: nothing is
recorded until a process calls ``cudaProfilerStart``. The batch script exports
``NEMOTRON_NSYS_STEPS=start:end`` and ``NEMOTRON_NSYS_RANKS=0,1``:

- the fallback trainer (:class:`Capture`) starts the capture before step ``start``
  and stops it after step ``end`` on those global ranks, on CUDA only (on a CPU
  there is nothing for nsys's CUDA trace to capture: one line says so);
- Megatron-Bridge gets its own switch, ``ConfigContainer.profiling`` =
  ``ProfilingConfig(use_nsys_profiler=True, profile_step_start, profile_step_end,
  profile_ranks)`` (``training/config.py``; from 0.4 inherited from Megatron-LM's
  ``megatron.training`` config; checked in every supported release's manifest), which
  is what its ``NsysPlugin`` asks for (:func:`native_profiling`).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from typing import Any

STEPS_ENV, RANKS_ENV = "NEMOTRON_NSYS_STEPS", "NEMOTRON_NSYS_RANKS"


def requested(environ: Mapping[str, str] | None = None) -> tuple[int, int, list[int]] | None:
    """``(start, end, ranks)`` from the job's environment, None when nsys is not on."""
    environ = os.environ if environ is None else environ
    steps = environ.get(STEPS_ENV) or ""
    start, sep, end = steps.partition(":")
    if not sep or not start.isdigit() or not end.isdigit():
        return None
    ranks = [int(r) for r in (environ.get(RANKS_ENV) or "0").split(",") if r.strip().isdigit()]
    return int(start), int(end), ranks or [0]


def native_profiling(environ: Mapping[str, str] | None = None) -> dict[str, Any] | None:
    """Megatron-Bridge's ``ProfilingConfig`` fields for the requested capture, None when off."""
    found = requested(environ)
    if found is None:
        return None
    start, end, ranks = found
    return {"use_nsys_profiler": True, "profile_step_start": start, "profile_step_end": end,
            "profile_ranks": ranks}


class Capture:
    """``cudaProfilerStart``/``Stop`` around the requested steps on this rank (no-op otherwise)."""

    def __init__(self, rank: int, *, cuda: bool, environ: Mapping[str, str] | None = None) -> None:
        found = requested(environ)
        self.start = self.end = None
        self.on = False
        if found is None or rank not in found[2]:
            return
        if not cuda:
            print(f"[nsys] rank {rank}: steps {found[0]}-{found[1]} requested, but this run is on the CPU: "
                  "nothing to capture", file=sys.stderr, flush=True)
            return
        self.start, self.end = found[0], found[1]

    def before(self, step: int) -> None:
        """Before step ``step`` (1-based): start the capture at ``start``."""
        if self.start is not None and step == max(self.start, 1) and not self.on:
            import torch

            torch.cuda.profiler.start()
            self.on = True

    def after(self, step: int) -> None:
        """After step ``step``: stop the capture at ``end``."""
        if self.on and step >= (self.end or 0):
            import torch

            torch.cuda.synchronize()
            torch.cuda.profiler.stop()
            self.on = False
