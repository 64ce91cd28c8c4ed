"""nemo_runspec.slurm.squash: one .sqsh per image, the import script, when a job is submitted."""

from __future__ import annotations

import subprocess

import pytest

from nemo_runspec.errors import ConfigError
from nemo_runspec.slurm.squash import (
    ensure_squashed_image,
    needs_squash,
    plan_squash,
    squashed_path,
)

PROFILE = {"account": "acct", "partition": "debug", "squash_dir": "/lustre/images"}


@pytest.mark.parametrize(("image", "expected"), [
    ("nvcr.io/nvidia/nemo:25.11", True), ("docker://ubuntu:22.04", True), ("podman://x", True),
    ("dir:///rootfs", True), ("/lustre/images/x.sqsh", False), ("./x.sqsh", False), ("", False), (None, False),
])
def test_needs_squash(image, expected):
    assert needs_squash(image) is expected


def test_one_stable_file_per_image():
    a = squashed_path("nvcr.io/nvidia/nemo:25.11", "/lustre/images/")
    assert a == squashed_path("nvcr.io/nvidia/nemo:25.11", "/lustre/images")
    assert a.startswith("/lustre/images/nvcr.io+nvidia+nemo+25.11-") and a.endswith(".sqsh")
    assert a != squashed_path("nvcr.io/nvidia/nemo:25.12", "/lustre/images")


def test_no_plan_without_squash_dir_or_for_a_sqsh():
    assert plan_squash({"account": "a"}, "nvcr.io/x:1") is None
    assert plan_squash(PROFILE, "/lustre/images/x.sqsh") is None


def test_import_script_uses_enroot_for_references_and_mksquashfs_for_dirs():
    plan = plan_squash(PROFILE, "nvcr.io/nvidia/nemo:25.11")
    assert 'enroot import --output "$tmp" docker://nvcr.io/nvidia/nemo:25.11' in plan.script
    assert "#SBATCH --account=acct" in plan.script and f"#SBATCH --output={plan.log_path}" in plan.script
    assert 'mv -f "$tmp" "$target"' in plan.script
    local = plan_squash(PROFILE, "dir:///srv/rootfs")
    assert 'mksquashfs /srv/rootfs "$tmp"' in local.script
    assert subprocess.run(["bash", "-n"], input=plan.script, text=True).returncode == 0


def test_force_flag_is_in_the_script():
    assert '"0" != 1' in plan_squash(PROFILE, "x/y:1").script
    assert '"1" != 1' in plan_squash(PROFILE, "x/y:1", force=True).script


@pytest.mark.parametrize("image", ["x/y:1; touch /tmp/p", "x/$(id):1", "a b"])
def test_image_with_shell_syntax_is_refused(image):
    with pytest.raises(ConfigError):
        plan_squash(PROFILE, image)


def test_submits_only_when_missing_or_forced(tmp_path):
    sqsh = tmp_path / "images" / "x.sqsh"
    plan = plan_squash({**PROFILE, "squash_dir": str(tmp_path / "images")}, "x/y:1")
    ran: list[str] = []

    def run(cmd: str):
        ran.append(cmd)
        if cmd.startswith("test -s"):
            return (0 if sqsh.exists() else 1), "", ""
        if cmd.startswith("sbatch"):
            return 0, "4242\n", ""
        return subprocess.run(cmd, shell=True, capture_output=True, text=True).returncode, "", ""

    assert ensure_squashed_image(run, plan) == "4242"
    assert (tmp_path / "images").is_dir()  # made before Slurm opens the log there
    sqsh = type(sqsh)(plan.path)
    sqsh.write_bytes(b"x")
    ran.clear()
    assert ensure_squashed_image(run, plan) is None
    assert not any(c.startswith("sbatch") for c in ran)
    assert ensure_squashed_image(run, plan, force=True) == "4242"


def _run_script(tmp_path, plan, *, enroot: str) -> tuple[int, str]:
    """Run the import script as Slurm would (its output into its log), with a stand-in
    ``enroot`` on PATH; returns the exit status and the log."""
    import os
    from pathlib import Path

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    (bin_dir / "enroot").write_text(f"#!/bin/bash\n{enroot}\n")
    (bin_dir / "enroot").chmod(0o755)
    log = Path(plan.log_path)
    log.parent.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "SLURM_JOB_ID": "77"}
    with open(log, "w") as out:
        rc = subprocess.run(["bash", "-c", plan.script], stdout=out, stderr=subprocess.STDOUT, env=env).returncode
    return rc, log.read_text()


def test_the_import_log_ends_with_its_outcome_line(tmp_path):
    from nemo_runspec.runtime.outcome import find_all, parse_line

    plan = plan_squash({**PROFILE, "squash_dir": str(tmp_path / "images")}, "nvcr.io/nvidia/nemo:25.11")
    rc, log = _run_script(tmp_path, plan, enroot='echo "[ERROR] URL https://nvcr.io/v2/ returned error code: 401 Unauthorized" >&2; exit 1')
    outcome = parse_line(log.splitlines()[-1])
    assert rc == 1 and outcome is not None and not outcome.ok and outcome.exit_code == 1
    assert outcome.message == ("error: importing nvcr.io/nvidia/nemo:25.11 failed: "
                               "[ERROR] URL https://nvcr.io/v2/ returned error code: 401 Unauthorized")
    rc, log = _run_script(tmp_path, plan, enroot='out=$3; echo data > "${out//\\"/}"; exit 0')
    [outcome] = find_all(log.splitlines())
    assert rc == 0 and outcome.ok and outcome.message.startswith(f"squashed: {plan.path} (")
    rc, log = _run_script(tmp_path, plan, enroot="exit 9")  # the file is there now
    assert rc == 0 and parse_line(log.splitlines()[-1]).message == f"already squashed: {plan.path}"
