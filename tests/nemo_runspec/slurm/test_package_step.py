"""The packaging step of a Slurm job (slurm/package_step.py) quotes every path."""

from __future__ import annotations

from pathlib import Path

from tests.nemo_runspec.test_unusual_paths import SCRIPT, _project


def test_the_packaging_step_quotes_every_path(tmp_path: Path) -> None:
    """SSH staging under a home with a space, quotes and a $ (nemo-run pasted the paths in)."""
    from nemo_runspec._nemo_run import lean

    lean()
    from nemo_run.core.execution.slurm import SlurmExecutor
    from nemo_run.core.tunnel.client import LocalTunnel

    from nemo_runspec.packaging._nemo_run import SelfContainedPackager
    from nemo_runspec.slurm import package_step

    script = _project(tmp_path / "r")
    job_dir = tmp_path / "a b 'c' $HOME \"d\"" / "job"
    job_dir.mkdir(parents=True)
    executor = SlurmExecutor(account="a", tunnel=LocalTunnel(job_dir=str(tmp_path / "remote")))
    executor.assign("t_1", str(job_dir.parent), task_id="job", task_dir="job")
    package_step.package(executor, SelfContainedPackager(script_path=str(script)), "job")
    assert (Path(executor.job_dir) / "code" / "main.py").read_text() == SCRIPT
