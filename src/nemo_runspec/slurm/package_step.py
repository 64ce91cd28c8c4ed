"""The packaging step of a Slurm job: nemo-run's ``SlurmExecutor.package``, with its paths quoted.

nemo-run 0.11.1 (pinned) runs the packager, then ``mkdir -p <job dir>/code`` and
``tar -xvzf <archive> -C <job dir>/code`` through a local shell with the paths
pasted in as they are, so a ``$NEMOTRON_HOME`` such as ``/Users/Jane Doe``
(where the job is staged before an SSH upload, or the job dir of a local tunnel
whose profile names a ``job_dir``) ends in ``tar: /Users/Jane: Cannot open``.
:func:`package` does the same steps with the same commands and the same
bookkeeping (``tunnel.packaging_jobs``), each path shell-quoted.
``tests/nemo_runspec/slurm/test_lean_equivalence.py`` pins the source it follows.
"""

from __future__ import annotations

import os
import shlex
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from nemo_run.core.execution.slurm import SlurmExecutor
    from nemo_run.core.packaging.base import Packager


def package(executor: SlurmExecutor, packager: Packager, job_name: str) -> None:
    """Package the job's code into ``<executor.job_dir>/code`` (``SlurmExecutor.package``)."""
    from invoke.context import Context
    from nemo_run.core.execution.slurm import get_packaging_job_key
    from nemo_run.core.packaging.base import Packager
    from nemo_run.core.packaging.git import GitArchivePackager
    from nemo_run.core.tunnel.client import PackagingJob

    key = get_packaging_job_key(executor.experiment_id, job_name)
    if key in executor.tunnel.packaging_jobs and not packager.symlink_from_remote_dir:
        return  # packaged already for this task name
    if packager.symlink_from_remote_dir or isinstance(packager, GitArchivePackager) \
            or executor.get_launcher().nsys_profile:
        # what this replay does not cover (a packager a library user built from nemo-run's own
        # classes, or nemo-run's nsys launcher option; our packagers and run.profile.nsys never
        # come here): nemo-run's own step, its paths unquoted as they always were
        executor.package(packager, job_name)
        return
    local_pkg = packager.package(Path(os.getcwd()).absolute(), executor.job_dir, job_name)
    code = os.path.join(executor.job_dir, "code")
    ctx = Context()
    ctx.run(f"mkdir -p {shlex.quote(code)}", in_stream=False)
    if local_pkg:
        ctx.run(f"tar -xvzf {shlex.quote(str(local_pkg))} -C {shlex.quote(code)} --ignore-zeros", hide=True,
                in_stream=False)
    executor.tunnel.packaging_jobs[key] = PackagingJob(
        symlink=False,
        dst_path=None if type(packager) is Packager
        else os.path.join(executor.tunnel.job_dir, Path(executor.job_dir).name, "code"),
    )
