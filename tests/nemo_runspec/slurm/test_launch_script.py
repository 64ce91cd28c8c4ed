"""A Slurm job started through the runspec's launch script (slurm/launch_script.py): once per node for torchrun, the default command kept for a setup-only direct job, the setup sourced before each raylet and run.cmd as the Ray driver, and a heredoc a setup line cannot end."""

from __future__ import annotations

import shlex

import pytest

from nemo_runspec import parse
from tests.nemo_runspec.execution.test_runspec_cmd import script


def _render(tmp_path, spec, prof_over=None, args=()):
    import nemo_run  # noqa: F401 - a required dependency: never skipped
    from nemo_run.core.packaging.base import Packager

    from nemo_runspec.slurm import prepare_job, render_sbatch

    prof = {"executor": "slurm", "account": "acct", "partition": "p", "container_image": "", "gpus_per_node": 0,
            "time": "00:05:00"} | (prof_over or {})
    job = prepare_job(env=prof, mode="batch", runspec=spec, packager=Packager(), script=str(spec.script_path),
                      args=list(args), base_dir=tmp_path / "jobs", exp_id="t-job_1")
    return job, render_sbatch(job)


def _heredoc(text: str, name: str) -> str:
    start = text.index(f"/{name} <<'NEMOTRON_RUNSPEC_EOF'\n") + len(f"/{name} <<'NEMOTRON_RUNSPEC_EOF'\n")
    return text[start:text.index("\nNEMOTRON_RUNSPEC_EOF", start)]


@pytest.mark.parametrize("image", ["", "docker://ubuntu:22.04"])
def test_slurm_torchrun_runs_the_launch_script_once_per_node(tmp_path, image):
    spec = parse(script(tmp_path, 'setup = "export A=1"', "[tool.runspec.run]", 'launch = "torchrun"',
                        'cmd = "uv run python {script} --config {config} {args}"'))
    job, text = _render(tmp_path, spec, {"nodes": 2, "container_image": image}, args=["$(id)"])
    seen = job.job_dir if not image else "/nemo_run"
    launch = _heredoc(text, "runspec_launch.sh")
    assert f". {seen}/runspec_setup.sh\n" in launch
    cmd = f"uv run python {spec.script_path} --config {seen}/train.yaml '$(id)'"
    assert launch.endswith("--nnodes 2 --nproc-per-node 1 --node-rank \"$SLURM_NODEID\" --tee 3 --no-python bash -c "
                           + shlex.quote(cmd))
    assert 'export NEMOTRON_HEAD_NODE_IP="$head_node_ip"' in text
    srun = [ln for ln in text.splitlines() if ln.startswith("srun --output")]
    assert len(srun) == 1 and srun[0].endswith(f"bash {seen}/runspec_launch.sh")
    assert " torchrun " not in srun[0]  # the launch script starts torchrun, once per node (one task)
    assert "#SBATCH --ntasks-per-node=1" in text
    assert _heredoc(text, "runspec_setup.sh").endswith("export A=1")


def test_slurm_direct_setup_only_keeps_the_default_command(tmp_path):
    spec = parse(script(tmp_path, 'setup = "echo hi"', "[tool.runspec.run]", 'launch = "direct"'))
    job, text = _render(tmp_path, spec, args=["--config", "/nemo_run/train.yaml", "x y"])
    launch = _heredoc(text, "runspec_launch.sh")
    assert launch.endswith(f"exec python {spec.script_path} --config {job.job_dir}/train.yaml 'x y'")
    assert "NEMOTRON_HEAD_NODE_IP" not in text


def test_a_setup_line_equal_to_the_heredoc_tag_cannot_end_it(tmp_path):
    spec = parse(script(tmp_path, 'setup = """\necho a\nNEMOTRON_RUNSPEC_EOF\necho b\n"""',
                        "[tool.runspec.run]", 'launch = "direct"'))
    _, text = _render(tmp_path, spec)
    assert "<<'NEMOTRON_RUNSPEC_EOF_'\n" in text
    body = text.split("<<'NEMOTRON_RUNSPEC_EOF_'\n", 1)[1].split("\nNEMOTRON_RUNSPEC_EOF_\n", 1)[0]
    assert body.endswith("echo a\nNEMOTRON_RUNSPEC_EOF\necho b")


def test_ray_sources_setup_before_each_raylet_and_runs_cmd_as_driver(tmp_path):
    spec = parse(script(tmp_path, 'setup = "export B=2"', "[tool.runspec.run]", 'launch = "ray"',
                        'cmd = "uv run --extra x python {script} --config {config}"'))
    job, text = _render(tmp_path, spec, {"nodes": 2})
    assert f"set +u; . {job.job_dir}/runspec_setup.sh; set -u" in text.split("pre-ray-start.sh\" <<'EOF_PRE'", 1)[1]
    assert _heredoc(text, "runspec_launch.sh").endswith(
        f"exec uv run --extra x python {spec.script_path} --config {job.job_dir}/train.yaml")
    driver = text.split("<<'EOF_DRIVER'\n", 1)[1].split("\nEOF_DRIVER", 1)[0]
    assert driver.endswith(f"bash {job.job_dir}/runspec_launch.sh")
