"""The nemo-run Packager classes (packaging/_nemo_run.py) called as nemo-run calls them
(``package(path, job_dir, name)``): the archive they write, and the packaging record beside it
that keeps the plan's reason; the hybrid packager puts each part under its key."""

from __future__ import annotations

import json
import tarfile

import pytest

from nemo_runspec.errors import PackagingError
from nemo_runspec.packaging import _registry
from nemo_runspec.packaging._nemo_run import (
    RunspecGitPackager,
    RunspecHybridPackager,
    SelfContainedPackager,
    _root,
    passthrough_packager,
)
from nemo_runspec.packaging.manifest import PackagingPlan


def _script(tmp_path):
    (tmp_path / "train.py").write_text("import json\nprint(json.dumps(1))\n")
    (tmp_path / "train.yaml").write_text("a: 1\n")
    return tmp_path / "train.py", tmp_path / "train.yaml"


def _names(archive):
    with tarfile.open(archive, "r:gz") as tar:
        return sorted(n.removeprefix("./") for n in tar.getnames() if n not in (".", "./"))


def test_self_contained_writes_its_archive_and_a_record_keeping_the_plans_reason(tmp_path):
    script, config = _script(tmp_path)
    pid = _registry.register(PackagingPlan(kind="self_contained", reason="the profile names it"))
    job_dir = tmp_path / "job"
    job_dir.mkdir()
    out = SelfContainedPackager(script_path=str(script), config_path=str(config), plan_id=pid).package(
        tmp_path, str(job_dir), "hello")
    assert out == str(job_dir / "hello.tar.gz")
    assert _names(out) == ["config.yaml", "main.py"]
    record = json.loads((job_dir / "hello.packaging.json").read_text())
    assert record["reason"] == "the profile names it" and record["kind"] == "self_contained"


def test_hybrid_puts_each_part_under_its_key(tmp_path):
    script, config = _script(tmp_path)
    job_dir = tmp_path / "job"
    job_dir.mkdir()
    parts = {key: SelfContainedPackager(script_path=str(script), config_path=str(config),
                                        plan_id=_registry.register(PackagingPlan(kind="self_contained")))
             for key in ("b", "a")}
    pid = _registry.register(PackagingPlan(kind="hybrid"))
    out = RunspecHybridPackager(sub_packagers=parts, plan_id=pid).package(tmp_path, str(job_dir), "h")
    assert _names(out) == ["a", "a/config.yaml", "a/main.py", "b", "b/config.yaml", "b/main.py"]
    record = json.loads((job_dir / "h.packaging.json").read_text())
    assert sorted(record["parts"]) == ["a", "b"] and record["file_count"] == 4
    assert sorted(p.name for p in job_dir.iterdir()) == ["h.packaging.json", "h.tar.gz"]  # parts were temporary


def test_git_packaging_outside_a_repository_is_one_line(tmp_path):
    with pytest.raises(PackagingError) as e:
        _root("", tmp_path)
    assert str(e.value) == f"{tmp_path} is not inside a git repository"
    assert RunspecGitPackager(repo_root="/r").repo_root == "/r"


def test_the_passthrough_packager_ships_nothing():
    from nemo_run.core.packaging.base import Packager

    assert type(passthrough_packager()) is Packager
