"""Ray jobs on Slurm through nemo-run, with our own sbatch template.

Why our own template (``templates/ray_slurm.sub.j2``) instead of nemo-run's
``ray.sub.j2``: the bundled one always emits pyxis flags and ``--mpi=pmix``,
needs ``jq``, assumes 8 GPUs and 128 CPUs per node, uses fixed ports (two
raylets on one host collide), never creates its log dir and waits for workers
forever. Ours adds container flags only when the profile has an image, takes
GPUs/CPUs from the allocation, gives every node its own port block, waits for
the head and the workers with a timeout and a clear message, returns the
driver's exit code as the job's and runs ``ray stop`` on exit.

How it is used through nemo-run (chosen over ``RayJob``): the recipe becomes an
ordinary ``Experiment`` task, a nemo-run ``Script`` whose metadata carries
``USE_WITH_RAY_CLUSTER_KEY``, on a ``SlurmExecutor`` whose ``ray_template`` is
the absolute path of our template. So Ray stages share everything with torchrun
stages: packaging, job dirs, ``--run``/``--batch`` following and the offline
dry run (``RayJob.start(dryrun=True)`` would contact the cluster; a ``RayJob``
whose name matches a pending job silently submits nothing). The Experiment steps
for that task are :class:`nemo_runspec.slurm.launch.SlurmLaunch` (the scheduler
materializes nemo-run's ``SlurmRayRequest`` with our template), so a Ray job
imports only the parts of nemo-run a Slurm job needs, as a torchrun job does.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nemo_runspec.templates import template_path

if TYPE_CHECKING:
    from nemo_run.core.execution.slurm import SlurmExecutor

RAY_TEMPLATE = template_path("ray_slurm.sub.j2")  # the reference's name: "ray_cpu.sub.j2"


def pre_start_setup_lines(commands: Iterable[str]) -> str:
    """Setup lines that make ``commands`` run once on every node before its raylet.

    nemo-run's Experiment path has no per-node hook for Ray jobs, so the
    commands are written to ``$CLUSTER_DIR/pre-ray-start.sh``, which the
    template sources inside each node's ``srun`` step.
    """
    body = "\n".join(c for c in commands if c.strip())
    if not body:
        return ""
    return f"cat >> \"$CLUSTER_DIR/pre-ray-start.sh\" <<'EOF_PRE'\n{body}\nEOF_PRE"


def ray_env_vars(*, python: str | None, port_base: int | None = None,
                 timeout: int | None = None) -> dict[str, str]:
    """Environment the template reads: interpreter, port block, start-up timeout."""
    env: dict[str, str] = {}
    if python:
        env["NEMOTRON_PYTHON"] = python
    if port_base is not None:
        env["NEMOTRON_RAY_PORT_BASE"] = str(int(port_base))
    if timeout is not None:
        env["NEMOTRON_RAY_TIMEOUT"] = str(int(timeout))
    return env


def configure_ray_executor(executor: SlurmExecutor, *, profile: Mapping[str, Any] | None = None,
                           python: str | None = None,
                           pre_start_commands: Iterable[str] = ()) -> SlurmExecutor:
    """Point a nemo-run ``SlurmExecutor`` at our Ray template and set its knobs.

    ``profile`` keys read: ``ray_port_base``, ``ray_timeout``. With no
    container image the job runs in the submitting Python environment, so
    ``python`` (usually ``sys.executable``) is exported as ``NEMOTRON_PYTHON``.
    """
    profile = dict(profile or {})
    executor.ray_template = str(RAY_TEMPLATE)
    executor.env_vars = {
        **(executor.env_vars or {}),
        **ray_env_vars(
            python=None if executor.container_image else python,
            port_base=profile.get("ray_port_base"),
            timeout=profile.get("ray_timeout"),
        ),
    }
    setup = pre_start_setup_lines(pre_start_commands)
    if setup:
        executor.setup_lines = "\n".join(x for x in (executor.setup_lines or "", setup) if x)
    return executor


def ray_script(path: str | Path, args: list[str] | None = None, *, entrypoint: str = "python",
               env: Mapping[str, str] | None = None) -> Any:
    """A nemo-run ``Script`` that runs as the driver of a Ray cluster."""
    from nemo_runspec._nemo_run import lean

    lean()
    from nemo_run.config import USE_WITH_RAY_CLUSTER_KEY, Script

    return Script(
        path=str(path),
        args=list(args or []),
        entrypoint=entrypoint,
        env=dict(env or {}),
        metadata={USE_WITH_RAY_CLUSTER_KEY: True},
    )
