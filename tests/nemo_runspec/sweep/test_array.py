"""The array job of a sweep (sweep/array.py): the script the dry run shows is the one
submitted, byte for byte; every point has its own dir, config, logs and 0600 secrets
file; the batch shell (not a quote) turns $SLURM_ARRAY_TASK_ID into the point's path."""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
from pathlib import Path

import pytest

from nemo_runspec import parse, slurm
from nemo_runspec.config.sweep import expand
from nemo_runspec.errors import ConfigError
from nemo_runspec.job.compiled import compile_job
from nemo_runspec.job.packager import packager_for
from nemo_runspec.job.run_config import RunConfig
from nemo_runspec.slurm.submission import submit_detached
from nemo_runspec.sweep.array import array_spec, build
from nemo_runspec.sweep.points import derive
from nemotron.recipes import RECIPES_DIR

from .conftest import SECRET

CASES = {  # launch kind -> (script, sweep)
    "torchrun": ("nano3/stage0_pretrain/train.py", ["train.train_iters=5,6,7"]),
    "ray": ("nano3/stage0_pretrain/data_prep.py", ["sample=10,20"]),
    "direct": ("nano3/eval/eval.py", ["evaluation.tasks.1.max_new_tokens=4,8"]),
}


def _array(kind: str, profile: str, parallel: int | None = None):
    script, overrides = CASES[kind]
    spec = parse(RECIPES_DIR / script)
    plan = expand(overrides)
    job = compile_job(spec, RunConfig(profile=profile, detach=True, config="tiny",
                                      overrides=plan.points[0].overrides), check_artifacts=False)
    prepared = slurm.prepare_job(job, *packager_for(job))
    points, apart = derive(job, plan.points, "sw-test")
    assert not apart
    return build(prepared, points, sweep_id="sw-test", parallel=parallel), plan


@pytest.mark.parametrize("profile", ["dev", "box"])
@pytest.mark.parametrize("kind", sorted(CASES))
def test_the_dry_run_script_is_the_submitted_script(sandbox, kind, profile):
    job, plan = _array(kind, profile, parallel=2)
    shown = slurm.render_sbatch(job)
    sub = submit_detached(job, announce=False)
    assert sub.job_id == "4242"
    submitted = (job.local_exp_dir / f"{job.name}_sbatch.sh").read_text()
    assert submitted == shown
    n = len(plan.points)
    assert f"#SBATCH --array=0-{n - 1}%2\n" in shown
    argv = sandbox["sbatch_log"].read_text().splitlines()
    assert argv == [f"--requeue --parsable {job.local_exp_dir}/{job.name}_sbatch.sh"]  # one sbatch
    assert SECRET not in shown
    for i in range(n):
        point = Path(job.job_dir) / "points" / str(i)
        train = (point / "train.yaml").read_text()
        assert json.loads((point / "point.json").read_text())["index"] == i
        assert f"sweep:\n    id: sw-test\n    index: {i}\n" in train
        secrets = point / ".nemotron-secrets.env"
        assert stat.S_IMODE(secrets.stat().st_mode) == 0o600 and SECRET in secrets.read_text()
    assert not (Path(job.job_dir) / ".nemotron-secrets.env").exists()  # no shared copy


@pytest.mark.parametrize("kind", sorted(CASES))
def test_the_batch_shell_expands_each_task_to_its_point(sandbox, kind):
    job, plan = _array(kind, "dev")
    text = slurm.render_sbatch(job)
    config = f"{job.job_dir}/points/${{SLURM_ARRAY_TASK_ID}}/train.yaml"
    assert f"--config {config}" in text and f"'{config}'" not in text  # a shell word, not quoted
    # what bash makes of the line for task 1: the point's own config
    line = next(ln for ln in text.splitlines() if f"--config {config}" in ln)
    word = line.split("--config ", 1)[1].split()[0]
    out = subprocess.run(["bash", "-c", f"echo {word}"], env={"SLURM_ARRAY_TASK_ID": "1", "PATH": os.environ["PATH"]},
                         capture_output=True, text=True).stdout.strip()
    assert out == f"{job.job_dir}/points/1/train.yaml"
    # each task sources (and deletes) its own secrets file
    word = re.search(r"NEMOTRON_SECRETS_FILE=(\S+);", text).group(1)
    out = subprocess.run(["bash", "-c", f"echo {word}"], env={"SLURM_ARRAY_TASK_ID": "2", "PATH": os.environ["PATH"]},
                         capture_output=True, text=True).stdout.strip()
    assert out == f"{job.job_dir}/points/2/.nemotron-secrets.env"
    if kind == "ray":  # each task's Ray cluster files apart
        assert "export CLUSTER_DIR=" + f"{job.job_dir}/ray/task-$SLURM_ARRAY_TASK_ID" in text


def test_a_single_ray_job_keeps_its_cluster_dir(sandbox):
    spec = parse(RECIPES_DIR / "nano3/stage0_pretrain/data_prep.py")
    job = compile_job(spec, RunConfig(profile="dev", detach=True, config="tiny"), check_artifacts=False)
    text = slurm.render_sbatch(slurm.prepare_job(job, *packager_for(job)))
    assert "task-$SLURM_ARRAY_TASK_ID" not in text and "--array" not in text


@pytest.mark.parametrize(("indices", "parallel", "spec"), [
    ([0, 1, 2, 3], None, "0-3"), ([3], None, "3"), ([0, 2, 3, 4, 7], 2, "0,2-4,7%2"), ([5, 1], None, "1,5"),
])
def test_array_spec(indices, parallel, spec):
    assert array_spec(indices, parallel) == spec


CMD_SCRIPT = '''# /// script
# [tool.runspec]
# name = "t/cmdsweep"
# [tool.runspec.run]
# launch = "{launch}"
# cmd = "python {{script}} --config {{config}} --out {{job_dir}}/out.txt"
# setup = "export GREETING=hello-from-setup"
# [tool.runspec.resources]
# gpus_per_node = 0
# ///
import os, sys
cfg = open(sys.argv[sys.argv.index("--config") + 1]).read()
out = sys.argv[sys.argv.index("--out") + 1]
open(out, "w").write(os.environ.get("GREETING", "") + " " + cfg.split("x: ")[1].split()[0] + "\\n")
'''


@pytest.mark.parametrize("launch", ["direct", "torchrun", "ray"])
def test_a_run_cmd_recipe_sweeps_each_task_with_its_own_launch_script(sandbox, launch):
    """run.setup/run.cmd in an array: each task writes its own setup and launch scripts into
    its point's dir (never one file for all), and they read its point's config and dir."""
    root = sandbox["root"]
    (root / "config").mkdir()
    (root / "config" / "default.yaml").write_text("x: 0\n")
    (root / "cmd.py").write_text(CMD_SCRIPT.format(launch=launch))
    spec = parse(root / "cmd.py")
    plan = expand(["x=11,22"])
    job = compile_job(spec, RunConfig(profile="dev", detach=True,
                                      overrides=(*plan.points[0].overrides, "run.env.packager=self_contained")),
                      check_artifacts=False)
    prepared = slurm.prepare_job(job, *packager_for(job))
    points, _ = derive(job, plan.points, "sw-cmd")
    array = build(prepared, points, sweep_id="sw-cmd")
    shown = slurm.render_sbatch(array)
    submit_detached(array, announce=False)
    assert (array.local_exp_dir / f"{array.name}_sbatch.sh").read_text() == shown
    job_dir = Path(array.job_dir)
    assert f"{job_dir}/runspec_launch.sh" not in shown  # no script shared by the tasks
    # the batch shell's lines that write the scripts, run as task 1 would run them
    lines = shown.splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith('sed "s/'))
    end = max(i for i, ln in enumerate(lines) if ln == "NEMOTRON_RUNSPEC_EOF")
    env = {"SLURM_ARRAY_TASK_ID": "1", "PATH": os.environ["PATH"]}
    subprocess.run(["bash", "-c", "\n".join(lines[start:end + 1])], env=env, check=True)
    launch_file = job_dir / "points" / "1" / "runspec_launch.sh"
    text = launch_file.read_text()
    assert f"{job_dir}/points/1/train.yaml" in text and "NEMOTRONARRAYTASKINDEX" not in text
    assert (job_dir / "points" / "1" / "runspec_setup.sh").exists() and not (job_dir / "points" / "0").joinpath(
        "runspec_launch.sh").exists()
    assert f"bash {job_dir}/points/${{SLURM_ARRAY_TASK_ID}}/runspec_launch.sh" in shown  # expanded by the shell
    if launch == "direct":  # run it: point 1's config, its dir, the setup's environment
        subprocess.run(["bash", str(launch_file)], env=env, check=True, cwd=job_dir / "code")
        assert (job_dir / "points" / "1" / "out.txt").read_text() == "hello-from-setup 22\n"
    if launch == "ray":  # every node sources its task's setup before its raylet
        assert f'. {job_dir}/points/"${{SLURM_ARRAY_TASK_ID}}"/runspec_setup.sh' in shown


def test_resilience_gives_each_task_its_own_dir_and_retries_is_refused(sandbox):
    """[resilience] in an array: each task's helper, records and NEMOTRON_RESILIENCE_DIR are in
    its point's dir (the batch shell expands them), none in the job dir every task shares."""
    text = sandbox["env_toml"].read_text()
    sandbox["env_toml"].write_text(text + '\n[tough]\nextends = "dev"\ntime = "01:00:00"\n'
                                   "resilience = { max_restarts = 2 }\n\n[retrying]\nextends = \"dev\"\nretries = 2\n")
    job, _ = _array("torchrun", "tough")
    shown = slurm.render_sbatch(job)
    submit_detached(job, announce=False)
    assert (job.local_exp_dir / f"{job.name}_sbatch.sh").read_text() == shown
    task_dir = f'{job.job_dir}/points/"${{SLURM_ARRAY_TASK_ID}}"/resilience'
    assert f"mkdir -p {task_dir}\n" in shown and f"NR_DIR={task_dir} " in shown
    assert f"{job.job_dir}/resilience" not in shown
    word = re.search(r"export NEMOTRON_RESILIENCE_DIR=(\S+)", shown).group(1)
    out = subprocess.run(["bash", "-c", f"echo {word}"], env={"SLURM_ARRAY_TASK_ID": "1", "PATH": os.environ["PATH"]},
                         capture_output=True, text=True).stdout.strip()
    assert out == f"{job.job_dir}/points/1/resilience"
    with pytest.raises(ConfigError, match="cannot use the profile's retries"):
        _array("torchrun", "retrying")
