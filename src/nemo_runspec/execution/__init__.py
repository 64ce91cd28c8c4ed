"""Execution helpers: the job's environment, the nemo-run executor, local runs.

=========================  ================================================
module                     holds
=========================  ================================================
``execution.env_vars``     :func:`build_env_vars`, :func:`split_env_vars`, W&B, HF
``execution.executor``     :func:`create_executor` (nemo-run ``SlurmExecutor``)
``execution.local``        :func:`execute_local`, :func:`run_local`
``execution.tunnels``      local and SSH tunnels, the job base dir
``execution.secret_file``  the 0600 secrets file and the line that sources it
``execution.ray``          our Ray-on-Slurm template and its knobs
``execution.backends``     their backends' declarations -> nemo-run's other executors
``execution.backend_job``  a job prepared for one of those, its dry run
``execution.backend_run``  :func:`run_job`: start it (``docker_job``: Docker)
``git_mounts``             :func:`clone_git_repos_via_tunnel` (re-exported here,
                           where the reference's table puts it)
``job.settings``           reading ``run.env``: launch, image, nodes and GPUs
                           (re-exported here, where it was)
=========================  ================================================

These are utilities, not a framework: a recipe command calls them in the open
(see ``docs/dev/architecture.md``). Nothing here imports nemo_run, ray or
torch at module level.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from nemo_runspec._lazy import lazy_exports

if TYPE_CHECKING:
    from nemo_runspec.env.git_mounts import clone_git_repos_via_tunnel
    from nemo_runspec.execution.backend_run import run_job
    from nemo_runspec.execution.env_vars import (
        artifacts_root_for_job,
        build_env_vars,
        code_env,
        split_env_vars,
        wandb_settings,
    )
    from nemo_runspec.execution.executor import (
        DEFAULT_JOB_NAME_PREFIX,
        DEFAULT_TIME,
        create_executor,
        get_startup_commands,
        per_node_setup,
        shell_value,
    )
    from nemo_runspec.execution.local import (
        execute_local,
        local_command,
        local_nproc,
        local_preview,
        run_local,
        visible_gpus,
    )
    from nemo_runspec.job.settings import (
        bare_metal_env,
        bare_metal_python,
        container_image,
        job_env,
        job_slug,
        launch_of,
        profile_values,
        resolve_resources,
    )

__all__ = [
    "DEFAULT_JOB_NAME_PREFIX",
    "DEFAULT_TIME",
    "artifacts_root_for_job",
    "bare_metal_env",
    "bare_metal_python",
    "build_env_vars",
    "clone_git_repos_via_tunnel",
    "code_env",
    "container_image",
    "create_executor",
    "execute_local",
    "get_startup_commands",
    "job_env",
    "job_slug",
    "launch_of",
    "local_command",
    "local_nproc",
    "local_preview",
    "per_node_setup",
    "profile_values",
    "resolve_resources",
    "run_job",
    "run_local",
    "shell_value",
    "split_env_vars",
    "visible_gpus",
    "wandb_settings",
]

__getattr__, __dir__ = lazy_exports(__name__, {
    "backend_run": ["run_job"],
    "env_vars": ["artifacts_root_for_job", "build_env_vars", "code_env", "split_env_vars",
                 "wandb_settings"],
    "executor": ["DEFAULT_JOB_NAME_PREFIX", "DEFAULT_TIME", "create_executor", "get_startup_commands", "per_node_setup", "shell_value"],
    "local": ["execute_local", "local_command", "local_nproc", "local_preview", "run_local", "visible_gpus"],
    "nemo_runspec.env.git_mounts": ["clone_git_repos_via_tunnel"],
    "nemo_runspec.job.settings": ["bare_metal_env", "bare_metal_python", "container_image", "job_env", "job_slug", "launch_of", "profile_values", "resolve_resources"],
})
