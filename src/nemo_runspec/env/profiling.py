"""``[PROFILE.profiling]`` (``run.profile.*`` on the command line): Nsight Systems around the training command.

Validated like the rest of the profile (strict types, one-line errors); what it does
to the batch script is :mod:`nemo_runspec.slurm.profiling` (docs/reports.md, "Profiling").
"""

from __future__ import annotations

import re

from pydantic import BaseModel, ConfigDict, Field, model_validator

_TRACE = re.compile(r"^[a-z0-9-]+(,[a-z0-9-]+)*$")


class ProfilingModel(BaseModel):
    """Profile training steps ``start_step``..``end_step`` on ``ranks`` with ``nsys profile``."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    #: wrap the training command in ``nsys profile`` (the table alone does nothing)
    nsys: bool = False
    #: first training step captured (``cudaProfilerStart`` before it; Megatron-Bridge's profile_step_start)
    start_step: int = Field(default=10, ge=0)
    #: last step captured (``cudaProfilerStop`` after it)
    end_step: int = Field(default=12, ge=1)
    #: global ranks that capture (the others run under nsys but never start a capture)
    ranks: list[int] = Field(default_factory=lambda: [0])
    #: where the ``.nsys-rep`` files go, as the job sees it (default: ``<job dir>/nsys``)
    output_dir: str | None = None
    #: what nsys traces (``-t``)
    trace: str = "nvtx,cuda"
    #: more ``nsys profile`` options, appended as given (each one word of the command)
    extra_args: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _consistent(self) -> ProfilingModel:
        if self.end_step < self.start_step:
            raise ValueError(f"profiling.end_step ({self.end_step}) is before start_step ({self.start_step})")
        if not self.ranks or any(r < 0 for r in self.ranks):
            raise ValueError(f"profiling.ranks must be global ranks (0, 1, ...), got {self.ranks}")
        if not _TRACE.match(self.trace):
            raise ValueError(f"profiling.trace {self.trace!r} is not a comma-separated list such as 'nvtx,cuda'")
        if self.output_dir is not None and ("\n" in self.output_dir or not self.output_dir.strip()):
            raise ValueError("profiling.output_dir must be a path")
        return self
