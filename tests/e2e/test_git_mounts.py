"""``${auto_mount:git+URL@REF,/target}`` for real: a git repository (a local one, as a
file URL the cluster can reach) is cloned on the cluster into the git cache at
submission, mounted into the job's container through pyxis at the target, and its
commit is recorded in the job's provenance. A moved branch gives the next job the
new commit; the earlier tree stays as it was."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from tests.e2e.test_containers import _cli_env
from tests.nemotron_cli import NEMOTRON

pytestmark = [pytest.mark.slurm]

RECIPE = '''\
# /// script
# [tool.runspec]
# name = "e2e/readmount"
#
# [tool.runspec.run]
# launch = "direct"
# ///
import pathlib
print("MOUNTED " + pathlib.Path("/opt/thing/VERSION").read_text().strip(), flush=True)
'''


def write_recipe(tmp_path: Path) -> Path:
    script = tmp_path / "readmount.py"
    script.write_text(RECIPE)
    (tmp_path / "config").mkdir(exist_ok=True)
    (tmp_path / "config" / "default.yaml").write_text("x: 1\n")
    return script


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), "-c", "user.email=t@t", "-c", "user.name=t", *args],
                          check=True, capture_output=True, text=True).stdout.strip()


def test_auto_mount_clones_on_the_cluster_and_mounts_the_commit(tmp_path, slurm_cluster, container_image):
    repo = tmp_path / "thing"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "VERSION").write_text("one\n")
    git(repo, "add", "VERSION")
    git(repo, "commit", "-qm", "one")
    first = git(repo, "rev-parse", "HEAD")
    script = write_recipe(tmp_path)
    cache = tmp_path / "git-cache"
    env = _cli_env(tmp_path, container_image, env_vars={},
                   extra_mounts=[f"${{auto_mount:git+file://{repo}@main,/opt/thing}}"],
                   extra=f'\n[cache]\ngit_dir = "{cache}"\n')

    def run() -> tuple[str, str]:
        proc = subprocess.run([str(NEMOTRON), "run", str(script), "--run", "ctr", "run.env.nodes=1"], env=env,
                              cwd=tmp_path, capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL)
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
        return proc.stdout, proc.stderr

    out, err = run()
    assert "MOUNTED one" in out
    assert f"[auto_mount] file://{repo}@main -> /opt/thing" in err
    assert (cache / "thing" / first / "VERSION").read_text() == "one\n"
    job_yaml = sorted((tmp_path / "nhome").rglob("job.yaml"))[-1]
    recorded = OmegaConf.to_container(OmegaConf.load(job_yaml).run.provenance.git_mounts)
    assert recorded == [{"url": f"file://{repo}", "ref": "main", "target": "/opt/thing", "name": "thing",
                         "commit": first}]

    (repo / "VERSION").write_text("two\n")  # the branch moves
    git(repo, "commit", "-qam", "two")
    second = git(repo, "rev-parse", "HEAD")
    out, _ = run()
    assert "MOUNTED two" in out
    assert (cache / "thing" / second / "VERSION").read_text() == "two\n"
    assert (cache / "thing" / first / "VERSION").read_text() == "one\n"  # the old tree is untouched


def test_dry_run_shows_the_mount_and_contacts_nothing(tmp_path, container_image):
    script = write_recipe(tmp_path)
    env = _cli_env(tmp_path, container_image, env_vars={},
                   extra_mounts=["${auto_mount:git+https://example.invalid/org/thing.git@release/1.0,/opt/thing}"])
    proc = subprocess.run([str(NEMOTRON), "run", str(script), "--batch", "ctr", "--dry-run"], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert re.search(r"git-cache/thing/<release/1\.0>:/opt/thing", proc.stdout), proc.stdout[-3000:]
    assert not list(tmp_path.rglob("git-cache"))
