"""Container images squashed once into enroot ``.sqsh`` files on the cluster.

pyxis can pull an image reference itself when a job starts, on every node of
every job. With ``squash_dir`` in the profile, an image reference is instead
imported once into ``<squash_dir>/<name>-<hash>.sqsh`` (shared filesystem) by
a small Slurm job on a compute node (never on the login node), and the
training job runs that file and waits for the import (``afterok``). The same
image always maps to the same file, so it is imported once; ``--force-squash``
imports it again.

Sources: a registry reference (``nvcr.io/nvidia/nemo:25.11``,
``docker://...``) or a local engine (``dockerd://``, ``podman://``) goes
through ``enroot import``; ``dir:///path/rootfs`` (a root filesystem already on
the cluster) through ``mksquashfs``. An image that already is a ``.sqsh`` path
is used as it is.
"""

from __future__ import annotations

import hashlib
import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from nemo_runspec.errors import ConfigError, SubmissionError
from nemo_runspec.runtime.outcome import shell_function

ENROOT_SCHEMES = ("docker://", "dockerd://", "podman://")
DIR_SCHEME = "dir://"


@dataclass(frozen=True)
class SquashPlan:
    """How one image becomes a ``.sqsh``: where, and the sbatch script that does it."""

    image: str
    path: str
    script: str
    log_path: str


def needs_squash(image: str | None) -> bool:
    """True for an image reference (registry, engine or ``dir://``), not a squashfs file."""
    if not image:
        return False
    return not (image.startswith(("/", ".")) or image.endswith(".sqsh"))


def squashed_path(image: str, squash_dir: str) -> str:
    """``<squash_dir>/<readable name>-<hash>.sqsh``: one file per image reference."""
    name = re.sub(r"[^A-Za-z0-9._-]+", "+", image.split("://", 1)[-1]).strip("+")[:80] or "image"
    digest = hashlib.sha256(image.encode()).hexdigest()[:12]
    return f"{squash_dir.rstrip('/')}/{name}-{digest}.sqsh"


def import_command(image: str, target: str) -> str:
    """The shell command that writes ``image`` as a squashfs to ``target``."""
    if image.startswith(DIR_SCHEME):
        source = image[len(DIR_SCHEME):]
        # enroot's own default squash options (ENROOT_SQUASH_OPTIONS "-comp lzo -noD"): data
        # blocks stored as they are, as for an image enroot imports; on the test image less
        # than half of plain -comp lzo's CPU time (8.5 s against 19.2 s), for a 1.7x larger file.
        return f"mksquashfs {shlex.quote(source)} {shlex.quote(target)} -noappend -comp lzo -noD -no-progress"
    uri = image if image.startswith(ENROOT_SCHEMES) else f"docker://{image}"
    return f"enroot import --output {shlex.quote(target)} {shlex.quote(uri)}"


def plan_squash(values: Mapping[str, Any], image: str | None, *, force: bool = False) -> SquashPlan | None:
    """The squash of ``image`` for a profile (``values``), or None when the profile has
    no ``squash_dir`` or the image needs none."""
    squash_dir = values.get("squash_dir")
    if not squash_dir or not needs_squash(image):
        return None
    assert image is not None
    from nemo_runspec import script_values

    reason = script_values.problem("image", image)
    if reason:  # it goes into a shell script
        raise ConfigError(f"invalid container image: {reason}", key="container_image")
    path = squashed_path(image, str(squash_dir))
    log = path.removesuffix(".sqsh") + ".log"
    q = shlex.quote
    partition = values.get("batch_partition") or values.get("partition")
    header = [
        "#!/bin/bash",
        f"#SBATCH --job-name=squash-{path.rsplit('/', 1)[-1].removesuffix('.sqsh')[:100]}",
        # no account or partition in the profile: the cluster's defaults (many need no account)
        *([f"#SBATCH --account={values['account']}"] if values.get("account") else []),
        *([f"#SBATCH --partition={partition}"] if partition else []),
        "#SBATCH --nodes=1",
        "#SBATCH --ntasks=1",
        "#SBATCH --time=01:00:00",
        f"#SBATCH --output={log}",
    ]
    # The log ends with the outcome line (nemo_runspec.runtime.outcome): on failure, the import's own last line.
    body = f"""set -euo pipefail
{shell_function()}
# Import {image} once into {path} (nemotron kit squash; nemo_runspec.slurm.squash).
target={q(path)}
log={q(log)}
mkdir -p "$(dirname "$target")"
if [[ -s "$target" && "{'1' if force else '0'}" != 1 ]]; then
  echo "already squashed: $target"
  emit_outcome true 0 "already squashed: $target"
  exit 0
fi
tmp="$target.$SLURM_JOB_ID.tmp"
trap 'rc=$?; rm -f "$tmp"; if (( rc != 0 )); then emit_outcome false "$rc" "error: importing {image} failed: $(grep -v "^ *$" "$log" 2>/dev/null | tail -n 1)"; fi' EXIT
echo "squashing {image} -> $target on $(hostname)"
{import_command(image, '$tmp').replace(q('$tmp'), '"$tmp"')}
mv -f "$tmp" "$target"
done="squashed: $target ($(du -h "$target" | cut -f1))"
echo "$done"
emit_outcome true 0 "$done"
"""
    return SquashPlan(image=image, path=path, script="\n".join(header) + "\n" + body, log_path=log)


def ensure_squashed_image(run: Any, plan: SquashPlan, *, force: bool = False) -> str | None:
    """Submit the squash job unless ``plan.path`` is already there (``force`` redoes it).

    ``run(cmd) -> (exit code, stdout, stderr)`` runs a shell command where jobs are
    submitted (:class:`~nemo_runspec.slurm.remote.Remote`). Returns the squash job's
    id (the training job must depend on it), or None when nothing needs doing.
    """
    if not force:
        code, _, _ = run(f"test -s {shlex.quote(plan.path)}")
        if code == 0:
            return None
    squash_dir = plan.path.rsplit("/", 1)[0]
    code, _, err = run(f"mkdir -p {shlex.quote(squash_dir)}")  # Slurm opens the log there first
    if code != 0:
        raise SubmissionError(f"cannot create squash_dir {squash_dir}: {err.strip()}", key="squash_dir")
    cmd = f"sbatch --parsable <<'NEMOTRON_SQUASH_EOF'\n{plan.script}NEMOTRON_SQUASH_EOF\n"
    code, out, err = run(cmd)
    job_id = out.strip().split(";")[0]
    if code != 0 or not job_id.isdigit():
        raise SubmissionError(f"Slurm rejected the squash job for {plan.image}: {(err or out).strip()}",
                              hint="check account/partition and squash_dir in the env.toml profile")
    return job_id
