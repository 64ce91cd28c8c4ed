"""executor = "slurm": prepare packages the code and builds the SlurmExecutor (offline); the
dry run is the exact sbatch script, with the squash script when the image is imported first."""

from __future__ import annotations

from nemo_runspec.backends.slurm import SlurmBackend


def test_the_dry_run_is_the_sbatch_script(compile_hello) -> None:
    job = compile_hello("sl")
    backend = SlurmBackend()
    prepared = backend.prepare(job, dependencies=["4242"])
    dry = backend.render(job, prepared)
    assert list(dry.scripts) == ["sbatch script"] and dry.commands is None
    script = dry.scripts["sbatch script"]
    assert script.startswith("#!/bin/bash") and "#SBATCH --account=acct" in script
    assert "#SBATCH --dependency=afterok:4242" in script


def test_a_squashed_image_adds_its_script(compile_hello) -> None:
    job = compile_hello("sq")
    backend = SlurmBackend()
    dry = backend.render(job, backend.prepare(job))
    [squash] = [title for title in dry.scripts if title.startswith("squash script")]
    assert "/lustre/sqsh" in squash and "enroot import" in dry.scripts[squash]
