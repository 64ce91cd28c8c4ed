"""`nemotron kit squash PROFILE [IMAGE]`: import a container image into the
profile's squash_dir once, as a Slurm job on a compute node, and wait for it.

Recipe commands do the same on their own before a job that needs the image
(``--run``/``--batch``); this command does it alone, ahead of time.
"""

from __future__ import annotations

import time

import typer

from nemo_runspec.cmdline.context import GlobalContext
from nemo_runspec.errors import CLIUsageError, ExecutionError


def squash(ctx: typer.Context, profile: str, image: str = typer.Argument(None)) -> int:
    """Squash a container image into the profile's squash_dir (enroot import on a compute node).

    IMAGE defaults to the profile's container_image. With --force-squash it is
    imported again even when the .sqsh exists; --dry-run prints the script.
    """
    from nemo_runspec.env import find_env_file, load_env_file, load_env_profile
    from nemo_runspec.env.discovery import not_found_error
    from nemo_runspec.job.settings import profile_values
    from nemo_runspec.slurm.queue import final_sacct_info, squeue_state
    from nemo_runspec.slurm.remote import Remote
    from nemo_runspec.slurm.squash import ensure_squashed_image, plan_squash

    root = ctx.find_root()
    gctx = root.obj if isinstance(root.obj, GlobalContext) else GlobalContext()
    path = find_env_file(gctx.env_file)
    if path is None:
        raise not_found_error(profile)
    values = profile_values(load_env_profile(profile, load_env_file(path)))
    image = image or values.get("container_image")
    if not image:
        raise CLIUsageError(f"profile {profile!r} names no container_image", key="container_image",
                            hint="give the image: nemotron kit squash PROFILE IMAGE")
    if not values.get("squash_dir"):
        raise CLIUsageError(f"profile {profile!r} sets no squash_dir", key="squash_dir",
                            hint='add squash_dir = "/shared/fs/images" to the profile')
    plan = plan_squash(values, image, force=gctx.force_squash)
    if plan is None:
        print(f"{image} is already a squashfs file: nothing to do")
        return 0
    if gctx.dry_run or values.get("dry_run") is True:  # the profile's dry_run = true, as for recipes
        print(plan.script, end="")
        return 0
    shell = Remote.for_profile(values)
    job_id = ensure_squashed_image(shell.run, plan, force=gctx.force_squash)
    if job_id is None:
        print(f"already squashed: {plan.path}")
        return 0
    print(f"squashing {image} -> {plan.path} in Slurm job {job_id} (log {plan.log_path})", flush=True)
    start = time.monotonic()
    while squeue_state(shell, job_id) is not None:
        time.sleep(2)
    info = final_sacct_info(shell, job_id)
    _, log, _ = shell.run(f"tail -n 12 {plan.log_path}")
    if not info or info["State"] != "COMPLETED":
        from nemo_runspec.runtime.outcome import find, find_all

        state = info["State"] if info else "unknown"
        said = find(log)  # the import's outcome line: its own last error (nemo_runspec.slurm.squash)
        rest = [ln for ln in log.strip().splitlines() if not find_all([ln])]
        why = said.message if said is not None else (rest[-1] if rest else "no log")
        raise ExecutionError(f"squash job {job_id} ended {state}: {why}", hint=f"see {plan.log_path}")
    print(f"squashed in {time.monotonic() - start:.1f}s: {plan.path}")
    return 0


