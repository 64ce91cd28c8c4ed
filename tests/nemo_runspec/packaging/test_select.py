"""Choosing packagers from a profile, and running them through nemo-run's own machinery."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from nemo_runspec import parse
from nemo_runspec.errors import PackagingError
from nemo_runspec.packaging.select import build_packager, default_packager_kind
from tests.nemo_runspec.packaging.git_repos import git, tar_contents

HEADER = '# /// script\n# [tool.runspec]\n# name = "t/{name}"\n#\n# [tool.runspec.run]\n# launch = "{launch}"\n# ///\n'


def write_script(path: Path, body: str, *, launch: str = "torchrun") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(HEADER.format(name=path.stem, launch=launch) + body)
    return path


@pytest.fixture(autouse=True)
def _home(tmp_path, monkeypatch):
    monkeypatch.setenv("NEMOTRON_HOME", str(tmp_path / "home"))


def test_default_kind_per_recipe(repo):
    train = parse(repo / "src/proj/recipes/train.py")
    kind, reason = default_packager_kind(train, train.script_path, repo)
    assert kind == "code" and "proj.util" in reason
    alone = parse(repo / "src/proj/recipes/standalone.py")
    assert default_packager_kind(alone, alone.script_path, repo)[0] == "self_contained"
    prep = parse(repo / "src/proj/recipes/prep.py")
    kind, reason = default_packager_kind(prep, prep.script_path, repo)
    assert kind == "code" and "ray" in reason


def test_the_preflight_ships_alone_by_default():
    """kit preflight reads the compatibility table only when nemotron is importable (an
    optional import): the default packager still ships the script alone."""
    from nemo_runspec.packaging.git_cli import find_repo_root
    from nemotron.recipes import RECIPES_DIR

    spec = parse(RECIPES_DIR / "kit" / "preflight.py")
    assert default_packager_kind(spec, spec.script_path, find_repo_root(spec.script_path.parent))[0] == "self_contained"


def test_unknown_packager_names_the_source_and_suggests(repo):
    spec = parse(repo / "src/proj/recipes/train.py")

    class Src:
        path, line = "env.toml", 7

    with pytest.raises(PackagingError) as ei:
        build_packager({"packager": "gti"}, runspec=spec, script_path=spec.script_path, sources={"packager": Src()})
    assert str(ei.value).startswith("env.toml:7: unknown packager 'gti'")
    assert "did you mean 'git'?" in str(ei.value)


def test_none_requires_a_workdir(repo):
    spec = parse(repo / "src/proj/recipes/train.py")
    with pytest.raises(PackagingError, match="workdir"):
        build_packager({"packager": "none"}, runspec=spec, script_path=spec.script_path)
    packager, plan = build_packager({"packager": "none", "workdir": "/opt/code"}, runspec=spec, script_path=spec.script_path)
    from nemo_run.core.packaging.base import Packager

    assert type(packager) is Packager
    assert plan.kind == "none" and plan.workdir == "/opt/code"


def test_pattern_matches_nothing_is_an_error(repo, tmp_path):
    spec = parse(repo / "src/proj/recipes/train.py")

    class Src:
        path, line = "env.toml", 3

    with pytest.raises(PackagingError) as ei:
        build_packager(
            {"packager": "pattern", "packager_include_pattern": ["src/**/*.py", "configs/*.yaml"]},
            runspec=spec, script_path=spec.script_path, sources={"packager_include_pattern": Src()},
        )
    assert str(ei.value).startswith("env.toml:3: include pattern 'configs/*.yaml' matches no file")
    # and at packaging time, when the files vanished after the job was built
    from nemo_runspec.packaging.pattern import package_pattern

    with pytest.raises(PackagingError, match="'nothing/\\*\\*' matches no file"):
        package_pattern(["nothing/**"], repo, tmp_path / "x.tar.gz")


def test_pattern_packager_content(repo, tmp_path):
    spec = parse(repo / "src/proj/recipes/train.py")
    (repo / "src/proj/gen.log").write_text("ignored by git but matched\n")
    packager, plan = build_packager(
        {"packager": "pattern", "packager_include_pattern": "proj/**/*.py", "packager_relative_path": "src"},
        runspec=spec, script_path=spec.script_path,
    )
    job = tmp_path / "job"
    job.mkdir()
    out = packager.package(Path("/"), str(job), "t")
    names = set(tar_contents(out))
    assert names == {"proj/__init__.py", "proj/util.py", "proj/recipes/train.py", "proj/recipes/standalone.py", "proj/recipes/prep.py"}
    assert plan.script == "proj/recipes/train.py" and plan.archive_path == out


def test_hybrid_puts_each_part_under_its_name(repo, tmp_path):
    spec = parse(repo / "src/proj/recipes/train.py")
    (repo / "conf").mkdir()
    (repo / "conf/a.yaml").write_text("a: 1\n")
    profile = {
        "packager": "hybrid",
        "packagers": {
            "code": {"packager": "git", "subpath": "src"},
            "cfg": {"packager": "pattern", "include_pattern": ["conf/*.yaml"]},
        },
    }
    packager, plan = build_packager(profile, runspec=spec, script_path=spec.script_path)
    job = tmp_path / "job"
    job.mkdir()
    out = packager.package(Path("/"), str(job), "t")
    files = tar_contents(out)
    assert files["cfg/conf/a.yaml"] == b"a: 1\n"
    assert files["code/proj/util.py"] == b"def f():\n    return 2\n"
    assert not any(n.startswith(("src/", "conf/")) for n in files)
    assert plan.script == "code/proj/recipes/train.py"
    assert set(plan.parts) == {"code", "cfg"} and plan.parts["code"].commit
    saved = json.loads((job / "t.packaging.json").read_text())
    assert saved["kind"] == "hybrid" and saved["parts"]["cfg"]["kind"] == "pattern"


def test_hybrid_unknown_sub_key(repo):
    spec = parse(repo / "src/proj/recipes/train.py")
    with pytest.raises(PackagingError, match="did you mean 'subpath'"):
        build_packager({"packager": "hybrid", "packagers": {"c": {"packager": "git", "subpth": "src"}}},
                       runspec=spec, script_path=spec.script_path)


def test_script_outside_subpath_is_refused(repo):
    spec = parse(repo / "src/proj/recipes/train.py")
    (repo / "docs").mkdir()
    with pytest.raises(PackagingError, match="outside the packaged directory"):
        build_packager({"packager": "code", "packager_subpath": "docs"}, runspec=spec, script_path=spec.script_path)


def test_git_packager_through_slurm_executor(repo, tmp_path, monkeypatch):
    """nemo-run's SlurmExecutor.package() runs our packager and extracts it into <job>/code."""
    import nemo_run as run

    spec = parse(repo / "src/proj/recipes/train.py")
    packager, plan = build_packager({"packager": "git"}, runspec=spec, script_path=spec.script_path)
    outside = tmp_path / "cwd"
    outside.mkdir()
    monkeypatch.chdir(outside)  # nemo-run's own GitArchivePackager fails here
    monkeypatch.setattr("sys.stdin", open(os.devnull))  # invoke (used by nemo-run) reads stdin
    exp_dir = tmp_path / "exps" / "experiments" / "exp1"
    executor = run.SlurmExecutor(
        account="x", tunnel=run.LocalTunnel(job_dir=str(tmp_path / "exps" / "experiments")), packager=packager,
    )
    executor = executor.clone()  # nemo-run clones executors in Experiment.add
    executor.assign("exp1", str(exp_dir), "train", "train")
    executor.package(executor.packager, job_name="train")
    code = exp_dir / "train" / "code"
    assert (code / "src/proj/util.py").read_text() == "def f():\n    return 2\n"
    assert (code / plan.script).is_file()
    # the plan we hold was filled in through the clone
    assert plan.archive_sha256 and plan.commit == git(repo, "rev-parse", "HEAD").strip()
    assert json.loads((exp_dir / "train" / "train.packaging.json").read_text())["archive_sha256"] == plan.archive_sha256


