"""One Slurm task rendered and submitted the way nemo-run's ``Experiment`` does it,
from only the parts of nemo-run that do it.

For one ``Script`` task on a ``SlurmExecutor``, nemo-run 0.11.1 (pinned exactly)
goes through:

1. ``Experiment.add``: ``executor.clone()``, ``executor.assign(exp_id, exp_dir,
   task_id=name, task_dir=name)``, a deep copy of the task;
2. ``Experiment._prepare`` -> ``Job.prepare``: ``executor.create_job_dir()`` and
   ``torchx_backend.packaging.package`` (the task as a TorchX ``AppDef``: the
   torchrun component for a ``Torchrun`` launcher, else one role running the
   script);
3. ``Job.launch(dryrun=True)`` -> ``Runner.dryrun`` ->
   ``SlurmTunnelScheduler._submit_dryrun``: ``executor.package(...)`` (the
   packager runs, the code is extracted into ``<job dir>/code``), the executor's
   macros substituted, ``SlurmBatchRequest`` (or ``SlurmRayRequest`` for a Ray
   task) materialized into ``<exp dir>/<name>_sbatch.sh``;
4. ``Experiment.run``: the experiment dir rsynced to an SSH tunnel, packager
   symlinks made, then ``SlurmTunnelScheduler.schedule``: ``sbatch --requeue
   --parsable [--dependency=...] <script>`` through the tunnel.

Importing the modules that hold those steps imports all of nemo-run (torch
included, when installed). :class:`SlurmLaunch` replays them step for step and
calls nemo-run's own objects for everything that builds the script or touches
the cluster: the executor's ``clone``/``assign``/``package``/``macro_values``,
the torchrun component, ``SlurmBatchRequest``/``SlurmRayRequest.materialize``,
the tunnel and nemo-run's ``rsync``. What it leaves out is nemo-run's own
bookkeeping, which nothing here reads: the experiment metadata files
(``_CONFIG``, ``_VERSION``, ``_TASKS``, ``_TUNNELS``, ``_DONE``, ``__main__.py``),
``configs/<name>_executor.yaml``/``<name>_config.yaml`` in the job dir and the
``$NEMORUN_HOME/.slurm_jobs`` line; jobs are followed and cancelled by their
Slurm id (``squeue``/``sacct``/``scancel``).

Anything outside what nemotron builds (``Partial`` tasks, fault-tolerance,
``SlurmTemplate`` or nsys launchers, non-Slurm executors) is refused rather than
replayed approximately. ``tests/nemo_runspec/slurm/test_lean_equivalence.py``
renders every kind of job both ways (this path, and ``import nemo_run`` +
``Experiment.dryrun`` in a separate process) and compares the bytes, and pins
the source of the nemo-run functions replayed here, so a nemo-run upgrade that
changes any of them fails that test instead of drifting silently.
"""

from __future__ import annotations

import copy
import os
import shlex
from pathlib import Path
from typing import Any

from nemo_runspec._nemo_run import lean
from nemo_runspec.errors import ExecutionError
from nemo_runspec.slurm import package_step

#: nemo-run's command for a batch job (``SlurmTunnelScheduler``).
SBATCH = ("sbatch", "--requeue", "--parsable")


class SlurmLaunch:
    """One task of one experiment: render its sbatch script, then submit it.

    ``base_dir`` is the local Experiment base dir (the experiment lives in
    ``<base_dir>/experiments/<title>/<exp_id>``). ``executor`` is cloned and
    assigned to this experiment, as ``Experiment.add`` does; the clone is
    :attr:`executor` (its ``job_details`` name the job's log files).
    """

    def __init__(self, *, title: str, exp_id: str, base_dir: str | os.PathLike[str], name: str,
                 task: object, executor: object) -> None:
        lean()
        from nemo_run.config import Script
        from nemo_run.core.execution.slurm import SlurmExecutor

        if not isinstance(executor, SlurmExecutor):
            raise ExecutionError(f"only a SlurmExecutor can be launched here, not {type(executor).__name__}")
        if not isinstance(task, Script):
            raise ExecutionError(f"only a nemo-run Script task can be launched here, not {type(task).__name__}")
        self.name = name
        self.exp_id = exp_id
        self.exp_dir = os.path.join(os.fspath(base_dir), "experiments", title, exp_id)
        # Experiment.add -> _add_single_job (name given, so the task dir is the name)
        self.executor = executor.clone()
        self.executor.assign(exp_id, self.exp_dir, task_id=name, task_dir=name)
        self.task = copy.deepcopy(task)
        self.request: Any = None
        self.job_id: str | None = None

    # ------------------------------------------------------------------ dry run
    def dryrun(self) -> str:
        """Package and write the sbatch script (``Experiment.dryrun`` for this
        task); returns the script's local path, ``<exp dir>/<name>_sbatch.sh``."""
        os.makedirs(self.exp_dir, exist_ok=True)  # Experiment._save_experiment
        self.executor.create_job_dir()  # Job.prepare
        app = self.app()
        _validate(app)  # Runner.dryrun
        return self._submit_dryrun(app)

    def app(self) -> Any:
        """The task as a TorchX ``AppDef`` (``torchx_backend.packaging.package``
        with ``serialize_to_file=True``, minus the YAML copies of the configs)."""
        import torchx.specs as specs
        from nemo_run.config import SCRIPTS_DIR
        from nemo_run.core.execution.launcher import FaultTolerance, Torchrun
        from nemo_run.run.torchx_backend.components import torchrun

        executor, name = self.executor, self.name
        env = {} | executor.env_vars

        def details(script: Any) -> tuple[list[str], list[str], str | None, bool, str | None, str]:
            substitute_rundir_path = None
            if executor.container_image is None and executor.tunnel is not None:
                substitute_rundir_path = os.path.join(executor.tunnel.job_dir, Path(executor.job_dir).name)
            role_args = script.to_command(
                filename=os.path.join(executor.job_dir, SCRIPTS_DIR, f"{name}.sh"),
                is_local=False,
                substitute_rundir_path=substitute_rundir_path,
            )
            m = script.path if script.m else None
            no_python = script.entrypoint != "python"
            if script.m:
                path = None
            elif script.inline and role_args:
                path = role_args[0]
            else:
                path = script.path
            return role_args, script.args, m, no_python, path, script.entrypoint

        role_args, args, m, no_python, script, entrypoint = details(self.task)
        metadata = self.task.metadata
        if self.task.env:
            env = env | self.task.env

        launcher = executor.get_launcher()
        if executor.supports_launcher_transform():
            transformed = launcher.transform([entrypoint] + role_args)
            if transformed:
                role_args, args, m, no_python, script, entrypoint = details(transformed)
        if isinstance(launcher, FaultTolerance) or launcher.nsys_profile:
            raise ExecutionError(
                f"{type(launcher).__name__} launchers (fault tolerance, nsys) are not replayed by "
                "nemo_runspec.slurm.launch", hint="see its docstring; add them there with a test",
            )
        if isinstance(launcher, Torchrun):
            app_def = torchrun.torchrun(
                *args, script=script, name=name, m=m, no_python=no_python, image="", h=None,
                cpu=-1, gpu=-1, memMB=1024,
                j=f"{executor.nnodes()}x{executor.nproc_per_node()}",
                rdzv_backend=launcher.rdzv_backend, rdzv_port=launcher.rdzv_port,
                rdzv_id=launcher.rdzv_id, env=env, mounts=[], debug=executor.packager.debug,
                max_retries=executor.retries, dgxc=False, lepton=False, use_env=False,
            )
        else:
            app_def = specs.AppDef(name=name, roles=[specs.Role(
                name=name, image="", entrypoint=entrypoint, num_replicas=1,
                resource=specs.resource(cpu=-1, gpu=-1, memMB=1024, h=None),
                args=role_args, env=env, mounts=specs.parse_mounts([]),
                max_retries=executor.retries,
            )])
        app_def.metadata = metadata
        return app_def

    def _submit_dryrun(self, app: Any) -> str:
        """``SlurmTunnelScheduler._submit_dryrun``: package, build the request, write the script."""
        from nemo_run.config import RUNDIR_NAME, USE_WITH_RAY_CLUSTER_KEY
        from nemo_run.core.execution.slurm import SlurmBatchRequest
        from nemo_run.run.ray.slurm import SlurmRayRequest

        executor = self.executor
        job_dir = executor.job_dir
        package_step.package(executor, executor.packager, Path(job_dir).name)  # executor.package, paths quoted
        values = executor.macro_values()

        if app.metadata and app.metadata.get(USE_WITH_RAY_CLUSTER_KEY, False):
            srun_cmds: list[list[str]] = []
            for role in app.roles:
                if values:
                    role = values.apply(role)
                srun_cmds.append([" ".join([role.entrypoint] + role.args)])
            if executor.heterogeneous and executor.resource_group:
                executor.run_as_group = True
            command = [app.roles[0].entrypoint] + app.roles[0].args
            req = SlurmRayRequest(
                name=app.roles[0].name,
                launch_cmd=list(SBATCH),
                command=" ".join(command),
                cluster_dir=os.path.join(executor.tunnel.job_dir, Path(job_dir).name, "ray"),
                template_name=executor.ray_template,
                executor=executor,
                workdir=f"/{RUNDIR_NAME}/code",
                nemo_run_dir=os.path.join(executor.tunnel.job_dir, Path(job_dir).name),
                command_groups=srun_cmds,
            )
        else:
            srun_cmds = []
            jobs = []
            envs: dict[str, str] = {}
            if values:
                executor.env_vars = {key: values.substitute(arg) for key, arg in executor.env_vars.items()}
                for resource_req in executor.resource_group:
                    resource_req.env_vars = {
                        key: values.substitute(arg) for key, arg in resource_req.env_vars.items()
                    }
            for role in app.roles:
                if values:
                    role = values.apply(role)
                srun_cmds.append([" ".join([role.entrypoint] + role.args)])
                jobs.append(role.name)
                envs |= role.env
            req = SlurmBatchRequest(
                launch_cmd=list(SBATCH),
                jobs=jobs,
                command_groups=srun_cmds,
                executor=executor,
                max_retries=min(role.max_retries for role in app.roles),
                extra_env=envs,
                launcher=executor.get_launcher(),
            )
        path = os.path.join(executor.experiment_dir, f"{executor.job_name}_sbatch.sh")
        script = req.materialize()
        with open(path, "w") as f:
            f.write(script)
        self.request = req
        return path

    # ------------------------------------------------------------------ submission
    def launch(self, *, schedule: bool = True) -> str | None:
        """Dry run, upload (SSH tunnel), then ``sbatch``: ``Experiment.run(detach=True)``
        for this task. Returns the Slurm job id (also :attr:`job_id`). With
        ``schedule`` false it stops before ``sbatch`` (the script and code are in
        place on the cluster; :mod:`nemo_runspec.pipeline.sbatch` runs it) and returns None."""
        from nemo_run.core.tunnel.client import SSHTunnel

        self.dryrun()
        tunnel = self.executor.tunnel
        try:
            if isinstance(tunnel, SSHTunnel):
                from nemo_run.core.tunnel.rsync import rsync

                tunnel.connect()
                if not tunnel.session:
                    raise ExecutionError(f"SSH tunnel {tunnel.key} failed to connect")
                # nemo-run pastes the source into a shell command: quoted, a home with a space works
                rsync(tunnel.session, shlex.quote(self.exp_dir), os.path.dirname(tunnel.job_dir))
            symlinks = [job.symlink_cmd() for job in tunnel.packaging_jobs.values() if job.symlink]
            if symlinks:
                tunnel.run(" && ".join(symlinks))
            if schedule:
                self._schedule()
        finally:
            if isinstance(tunnel, SSHTunnel):
                tunnel.cleanup()
        return self.job_id  # type: ignore[return-value]

    def _schedule(self) -> str:
        """``SlurmTunnelScheduler.schedule``: run sbatch through the tunnel; sets :attr:`job_id`."""
        req = self.request
        executor = req.executor
        tunnel = executor.tunnel
        dst_path = os.path.join(tunnel.job_dir, f"{executor.job_name}_sbatch.sh")
        if executor.dependencies:
            req.launch_cmd = [
                *SBATCH,
                f"--dependency={executor.dependency_type}:{':'.join(executor.parse_deps())}",
            ]
        req.launch_cmd += [dst_path]
        from nemo_runspec.execution.tunnels import run_via
        from nemo_runspec.slurm.sbatch import sbatch

        # An interrupt stops sbatch at once (a job it queued anyway is found and cancelled);
        # a local sbatch is a child tied to this process's life, never left behind.
        rc, out, err = sbatch(req.launch_cmd, script=dst_path, job_name=executor.job_details.job_name,
                              run=lambda cmd: run_via(tunnel, cmd),
                              local=not isinstance(tunnel, _ssh_tunnel_class()))
        if rc != 0:
            raise SbatchFailed(" ".join(req.launch_cmd), rc, out, err)
        self.job_id = out.strip()
        return self.job_id


class SbatchFailed(Exception):
    """``sbatch`` exited non-zero; ``result`` has the shape of invoke's (``command``,
    ``exited``, ``stdout``, ``stderr``) that the submission's error messages read."""

    def __init__(self, command: str, exited: int, stdout: str, stderr: str) -> None:
        from types import SimpleNamespace

        super().__init__(f"`{command}` exited {exited}: {stderr.strip() or stdout.strip()}")
        self.result = SimpleNamespace(command=command, exited=exited, stdout=stdout, stderr=stderr)


def _ssh_tunnel_class() -> type:
    from nemo_run.core.tunnel.client import SSHTunnel

    return SSHTunnel


def _validate(app: Any) -> None:
    """``Runner.dryrun``'s input checks (the Slurm scheduler's own ``_validate`` is a no-op)."""
    if not app.roles:
        raise ValueError(f"No roles for app: {app.name}. Did you forget to add roles to AppDef?")
    for role in app.roles:
        if not role.entrypoint:
            raise ValueError(f"No entrypoint for role: {role.name}.")
        if role.num_replicas <= 0:
            raise ValueError(f"Non-positive replicas for role: {role.name}.")
