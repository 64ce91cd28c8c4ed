"""The compiled job and what a run is asked to do.

========================  ====================================================
module                    holds
========================  ====================================================
``job.compiled``          :class:`CompiledJob`, :func:`compile_job`: the one object every step takes
``job.run_config``        :class:`RunConfig`: a command line's typed form (the reference's ``run``)
``job.settings``          reading the job's ``run.env``: launch, image, nodes and GPUs
========================  ====================================================

``from nemo_runspec.job import compile_job, CompiledJob`` keeps working: this package was
the module ``job.py`` before issue 31 and exports its public names, loaded on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from nemo_runspec._lazy import lazy_exports

if TYPE_CHECKING:
    from nemo_runspec.job.compiled import CompiledJob, Mode, compile_job
    from nemo_runspec.job.run_config import RunConfig

__all__ = ["CompiledJob", "Mode", "RunConfig", "compile_job"]

__getattr__, __dir__ = lazy_exports(__name__, {
    "compiled": ("CompiledJob", "Mode", "compile_job"),
    "run_config": ("RunConfig",),
})
