"""nemo_runspec.env.git_mounts: the ${auto_mount:...} grammar, and the clone/update script
run for real with bash against real git repositories (a local Remote: where a tunnel
would run it on a cluster)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from nemo_runspec.env import git_mounts
from nemo_runspec.errors import ConfigError, ExecutionError
from nemo_runspec.slurm.remote import Remote


@pytest.mark.parametrize(("entry", "url", "ref", "name"), [
    ("${auto_mount:git+https://github.com/NVIDIA-NeMo/Megatron-Bridge.git@romeyn/parquet-pack,/opt/MB}",
     "https://github.com/NVIDIA-NeMo/Megatron-Bridge.git", "romeyn/parquet-pack", "Megatron-Bridge"),
    ("${auto_mount:git+ssh://git@host.example/org/repo.git@v1.2,/opt/r}", "ssh://git@host.example/org/repo.git",
     "v1.2", "repo"),
    ("${auto_mount:git+git@host.example:org/repo.git@main,/opt/r}", "git@host.example:org/repo.git", "main", "repo"),
    ("${auto_mount:git+https://host.example/org/repo,/opt/r}", "https://host.example/org/repo", "HEAD", "repo"),
    ("auto_mount:git+file:///srv/x.git@0123456789abcdef0123456789abcdef01234567,/opt/x", "file:///srv/x.git",
     "0123456789abcdef0123456789abcdef01234567", "x"),
])
def test_entries_parse(entry, url, ref, name):
    m = git_mounts.parse_entry(entry)
    assert (m.url, m.ref, m.name) == (url, ref, name) and m.target.startswith("/opt/")


@pytest.mark.parametrize(("entry", "words"), [
    ("${auto_mount:https://x/r.git@main,/opt/r}", "must start with git+"),
    ("${auto_mount:git+https://x/r.git@main}", "names no place in the container"),
    ("${auto_mount:git+https://x/r.git@main,opt/r}", "must be an absolute path"),
    ("${auto_mount:git+https://x/r.git@main,/opt/../etc}", "must be an absolute path"),
    ("${auto_mount:git+https://x/r.git@$(id),/opt/r}", "is not a branch, tag or commit name"),
    ("${auto_mount:git+https://x/r.git@a..b,/opt/r}", "is not a branch, tag or commit name"),
    ("${auto_mount:git+-oProxyCommand=x,/opt/r}", "is not a git URL"),
    ("${auto_mount:git+https://x/r.git x@main,/opt/r}", "is not a git URL"),
])
def test_bad_entries_are_one_line(entry, words):
    with pytest.raises(ConfigError) as err:
        git_mounts.parse_entry(entry)
    assert words in str(err.value) and "\n" not in str(err.value)


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), "-c", "user.email=t@t", "-c", "user.name=t", *args],
                          check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture(params=["it's_a_repo"])
def origin(tmp_path: Path, request) -> Path:
    repo = tmp_path / request.param  # with a quote in the path, quoting is exercised
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "f.txt").write_text("1\n")
    git(repo, "add", "f.txt")
    git(repo, "commit", "-qm", "1")
    return repo


def local() -> Remote:
    return Remote.for_profile({"tunnel": "local"})


def test_sync_clones_then_reuses_then_follows_the_branch(tmp_path, origin):
    cache = tmp_path / "cache dir"
    mount = git_mounts.parse_spec(f"git+file://{origin}@main", "/opt/x")
    ((m, path, first),) = git_mounts.sync(local().run, [mount], str(cache))
    assert first == git(origin, "rev-parse", "HEAD") and Path(path, "f.txt").read_text() == "1\n"
    inode = Path(path, "f.txt").stat().st_ino
    (_, again, same), = git_mounts.sync(local().run, [mount], str(cache))
    assert (again, same) == (path, first) and Path(again, "f.txt").stat().st_ino == inode  # not rewritten
    (origin / "f.txt").write_text("2\n")
    git(origin, "commit", "-qam", "2")
    (_, newer, second), = git_mounts.sync(local().run, [mount], str(cache))
    assert second != first and Path(newer, "f.txt").read_text() == "2\n"
    assert Path(path, "f.txt").read_text() == "1\n"  # a running job's tree never changes
    assert not list(cache.rglob(".tmp-*"))


def test_an_unknown_ref_is_one_line_naming_the_repository(tmp_path, origin):
    mount = git_mounts.parse_spec(f"git+file://{origin}@no-such-branch", "/opt/x")
    with pytest.raises(ExecutionError) as err:
        git_mounts.sync(local().run, [mount], str(tmp_path / "cache"))
    assert f"could not get file://{origin}@no-such-branch on the cluster" in str(err.value)
    assert "no ref no-such-branch" in str(err.value)


@pytest.mark.parametrize("origin", ["plain_repo"], indirect=True)  # OmegaConf's grammar: no quotes
def test_the_reference_call_uses_what_the_resolver_registered(tmp_path, origin):
    from omegaconf import OmegaConf

    from nemo_runspec.config.resolvers import register_resolvers

    class Tunnel:  # the nemo-run tunnel interface the reference's call gets
        def run(self, cmd, hide=True, warn=True):
            p = subprocess.run(cmd, shell=True, capture_output=True, text=True)
            return type("R", (), {"return_code": p.returncode, "stdout": p.stdout, "stderr": p.stderr})

    git_mounts.clear_git_mounts()
    register_resolvers()
    cfg = OmegaConf.create({"mounts": [f"${{auto_mount:git+file://{origin}@main,/opt/thing}}"]})
    assert cfg.mounts[0] == f"auto_mount:git+file://{origin}@main,/opt/thing"
    (mount,) = git_mounts.clone_git_repos_via_tunnel(Tunnel(), str(tmp_path / "jobs"))
    path, target = mount.rsplit(":", 1)
    assert target == "/opt/thing" and path.startswith(str(tmp_path / "jobs" / "git-cache"))
    assert Path(path, "f.txt").read_text() == "1\n"
    git_mounts.clear_git_mounts()
