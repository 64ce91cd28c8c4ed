"""nemo_runspec.squash: one .sqsh per image, the import script, when a job is submitted."""

from __future__ import annotations

import subprocess

import pytest

from nemo_runspec.errors import ConfigError
from nemo_runspec.squash import ensure_squashed_image, needs_squash, plan_squash, squashed_path

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
