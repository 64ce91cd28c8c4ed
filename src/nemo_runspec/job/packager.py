"""The packager of a compiled job: :func:`~nemo_runspec.packaging.select.build_packager` given
the job's parts. Packaging takes plain values and knows nothing of a job; the job knows its own."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from nemo_runspec.job.compiled import CompiledJob
    from nemo_runspec.packaging.manifest import PackagingPlan


def packager_for(job: CompiledJob) -> tuple[Any, PackagingPlan]:
    """``(nemo-run packager, PackagingPlan)`` of ``job``: the packager its run environment
    names (or the recipe's default), built for its runspec's script, with error locations from
    its profile, the ``[cache]`` dir of its env.toml and progress shown on the console."""
    from nemo_runspec.packaging.cache import packages_dir
    from nemo_runspec.packaging.progress import console_progress
    from nemo_runspec.packaging.select import build_packager

    return build_packager(
        job.run_env, runspec=job.runspec, script_path=job.runspec.script_path,
        sources=job.profile.sources if job.profile is not None else None,
        progress=console_progress(), cache_dir=packages_dir(job.sections.get("cache")),
    )
