"""Render or submit one kind of Slurm job, the lean way or through all of nemo-run.

Run as a script, one job per process so the two ways never share a module cache::

    python lean_cases.py {lean,full} render {CASE,all} BASE_DIR
    python lean_cases.py {lean,full} submit CASE BASE_DIR

and prints one JSON object: the sbatch script(s), the modules imported, and for
``submit`` the sbatch command line the fake ``sbatch`` on PATH received and the
files of the experiment dir.

``full`` is the reference: ``import nemo_run`` and nemo-run's own ``Experiment``
(``dryrun`` for render, ``run(detach=True)`` for submit), the way
``nemo_runspec.slurm`` worked before it imported only the parts it needs.
``lean`` is ``nemo_runspec.slurm.render_sbatch`` / ``submit_detached``.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

from nemo_runspec.spec.models import Runspec, RunspecResources, RunspecRun

SECRET = "hf_leanCaseSecret0123456789abcdef"
EXP_SUFFIX = "lean"

BASE = {"executor": "slurm", "account": "testacct", "partition": "debug", "time": "00:10:00"}
CONTAINER = {"container_image": "nvcr.io/nvidia/nemo:25.07", "mounts": ["/lustre:/lustre"]}
BARE = {"container_image": ""}

#: name -> (launch, profile keys, prepare_job keywords)
CASES: dict[str, tuple[str, dict, dict]] = {
    "torchrun-container-secrets": (
        "torchrun", {**CONTAINER, "nodes": 2, "gpus_per_node": 8, "exclusive": True,
                     "sbatch_options": {"gpu-bind": "none"}, "retries": 1},
        {"secrets": {"HF_TOKEN": SECRET}, "startup_commands": ["echo node $(hostname)"],
         "env_vars": {"PLAIN": "a b", "PATH": "/opt/bin:$PATH"}},
    ),
    "torchrun-bare-one-node": ("torchrun", {**BARE, "nodes": 1, "gpus_per_node": 0, "nproc_per_node": 2}, {}),
    "direct-container": ("direct", {**CONTAINER, "nodes": 1, "gpus_per_node": 1,
                                    "srun_args": ["--mpi=none"]}, {}),
    "direct-bare-secrets": ("direct", {**BARE, "nodes": 2, "gpus_per_node": 0, "ntasks_per_node": 2},
                            {"secrets": {"WANDB_API_KEY": SECRET}}),
    "ray-container": ("ray", {**CONTAINER, "nodes": 2, "gpus_per_node": 8, "cpus_per_task": 16,
                              "ray_port_base": 41000, "ray_timeout": 600},
                      {"startup_commands": ["echo pre-ray"], "secrets": {"HF_TOKEN": SECRET}}),
    "ray-bare": ("ray", {**BARE, "nodes": 2, "gpus_per_node": 0}, {}),
    "torchrun-ssh-dependency": (
        "torchrun", {**CONTAINER, "tunnel": "ssh", "host": "10.255.255.1", "user": "u", "port": 22,
                     "remote_job_dir": "/remote/jobs", "nodes": 2, "gpus_per_node": 4,
                     "dependency_type": "afterany"},
        {"dependencies": ["4141"]},
    ),
    "torchrun-container-resilience": (
        "torchrun", {**CONTAINER, "nodes": 2, "gpus_per_node": 8,
                     "resilience": {"max_restarts": 3, "signal_before": 120, "stall_timeout": 300}},
        {"secrets": {"HF_TOKEN": SECRET}, "startup_commands": ["echo node $(hostname)"]},
    ),
    "direct-bare-resilience": ("direct", {**BARE, "nodes": 1, "gpus_per_node": 0, "resilience": {}}, {}),
    "direct-local-dependency": ("direct", {**BARE, "nodes": 1, "gpus_per_node": 0,
                                           "dependency_type": "afterany"},
                                {"dependencies": ["4141"]}),
}
#: cases that can be submitted here (a local tunnel and the fake sbatch)
SUBMIT_CASES = ("torchrun-container-secrets", "direct-bare-secrets", "ray-container",
                "direct-local-dependency", "torchrun-container-resilience")


def prepared(case: str, base_dir: Path):
    from nemo_runspec.packaging import build_packager
    from nemo_runspec.slurm import prepare_job

    launch, prof, kw = CASES[case]
    script = base_dir.parent / "train.py"
    script.write_text("import sys\nprint('train', sys.argv)\n")
    spec = Runspec(name=f"lean/{case}", script_path=script, run=RunspecRun(launch=launch),
                   resources=RunspecResources(nodes=1, gpus_per_node=0))
    profile = {**BASE, **prof, "packager": "self_contained"}
    packager, plan = build_packager(profile, runspec=spec, script_path=script, repo_root=None)
    name = f"lean-{case}"
    return prepare_job(env=profile, mode="batch", runspec=spec, packager=packager,
                       script=plan.script, args=["--config", "/nemo_run/train.yaml", "--n", "it's 3"],
                       base_dir=base_dir, exp_id=f"{name}_{EXP_SUFFIX}", **kw)


def full_render(job) -> str:
    """What render_sbatch did before the lean path: nemo-run's Experiment.dryrun."""
    import nemo_run as run

    from nemo_runspec.job.run_config import quiet_nemo_run

    executor = job.executor.clone()
    if not getattr(executor.packager, "symlink_from_remote_dir", None):
        executor.packager = run.Packager()
    tmp = Path(tempfile.mkdtemp(prefix="lean-full-"))
    try:
        with quiet_nemo_run():
            exp = _experiment(job, tmp)
            with exp:
                exp.add(_task(job), executor=executor, name=job.name)
                exp.dryrun(log=False, delete_exp_dir=False)
                exp._launched = False
        return (tmp / "experiments" / job.title / job.exp_id / f"{job.name}_sbatch.sh").read_text()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def full_submit(job) -> str:
    """What submit_detached did before the lean path: nemo-run's Experiment.run."""
    from nemo_runspec.execution.submit_env import submission_environment
    from nemo_runspec.job.run_config import quiet_nemo_run
    from nemo_runspec.slurm.remote import make_remote_dir, place_files, place_secrets

    job.local_exp_dir.mkdir(parents=True, exist_ok=True)
    with quiet_nemo_run(), submission_environment(job.secrets.values()):
        place_secrets(job)
        place_files(job)
        if job.is_ray:
            make_remote_dir(job, job.ray_log_dir)
        exp = _experiment(job, job.base_dir)
        with exp:
            exp.add(_task(job), executor=job.executor, name=job.name)
            exp.run(detach=True)
    return exp.jobs[0].handle.split("://", 1)[1].split("/")[1]


def _experiment(job, base_dir: Path):
    from nemo_runspec.job.run_config import experiment_class

    return experiment_class()(
        job.title, id=job.exp_id, base_dir=str(base_dir), clean_mode=True,
        enable_goodbye_message=False, skip_status_at_exit=True, log_level="ERROR",
    )


def _task(job):
    """The job's nemo-run task as the lean path builds it (its words quoted for a direct
    task): both ways run the same task, what is compared is how it is launched."""
    from nemo_runspec.slurm.render import task_for

    return task_for(job)


def files_of(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())


def main(way: str, action: str, case: str, base_dir: str) -> dict:
    base = Path(base_dir)
    if way == "full":
        import nemo_run  # noqa: F401  (all of it, first: the reference)
    if action == "render":  # CASE may be "all": one process renders every case
        scripts = {}
        for name in sorted(CASES) if case == "all" else [case]:
            job = prepared(name, base)
            if way == "full":
                scripts[name] = full_render(job)
            else:
                from nemo_runspec.slurm import render_sbatch

                scripts[name] = render_sbatch(job)
        return {"scripts": scripts, "modules": sorted(sys.modules)}
    job = prepared(case, base)
    if way == "full":
        job_id = full_submit(job)
    else:
        from nemo_runspec.slurm import submit_detached

        job_id = submit_detached(job).job_id
    log = Path(os.environ["FAKE_SBATCH_LOG"])
    out = {"job_id": job_id, "script": Path(job.sbatch_path).read_text(),
           "files": files_of(job.local_exp_dir),
           "sbatch_argv": log.read_text().splitlines() if log.exists() else []}
    out["modules"] = sorted(sys.modules)
    return out


if __name__ == "__main__":
    print(json.dumps(main(*sys.argv[1:5])))
