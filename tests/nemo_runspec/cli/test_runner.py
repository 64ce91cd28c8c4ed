"""launch(): the one hand-over from a recipe command to its job's backend. A dry run shows the
job, the backend's rendering, then the command's own block; what a job waits for is submitted
only where the backend can wait for jobs."""

from __future__ import annotations

import pytest

from nemo_runspec.cli.runner import launch


def test_a_local_dry_run_shows_the_job_then_the_extra_block(compile_hello, capsys) -> None:
    job = compile_hello("here")
    seen = []
    rc = launch(job, extra=lambda console: (seen.append(console), console.print("EXTRA BLOCK")),
                before_submit=lambda: pytest.fail("a local job waits for nothing"))
    out = capsys.readouterr().out
    assert rc == 0 and len(seen) == 1
    assert "Job config (job.yaml)" in out and "Local command" in out
    assert out.index("Local command") < out.index("EXTRA BLOCK")


def test_slurm_submits_what_the_job_waits_for_first(compile_hello, capsys) -> None:
    job = compile_hello("sl")
    calls = []
    rc = launch(job, before_submit=lambda: calls.append(1) or ["777"])
    out = capsys.readouterr().out
    assert rc == 0 and calls == [1]
    assert "#SBATCH --dependency=afterok:777" in out


def test_a_platform_never_waits_and_prints_its_warning(compile_hello, capsys) -> None:
    job = compile_hello("dgx")
    rc = launch(job, before_submit=lambda: pytest.fail("dgxcloud cannot wait for jobs"))
    captured = capsys.readouterr()
    assert rc == 0 and "nemo-run DGXCloudExecutor" in captured.out
    assert captured.err.startswith("warning: submitting this job would stop here: ")
