"""Import cost, progress reporting, cache pruning and plan serialisation of nemo_runspec.packaging."""

from __future__ import annotations

import io
import json

from nemo_runspec.packaging import cache as pcache
from nemo_runspec.packaging.manifest import FileEntry, PackagingPlan
from nemo_runspec.packaging.progress import ProgressEvent, console_progress
from tests.import_probes import imported_after


def test_import_is_cheap_and_does_not_pull_nemo_run():
    out = imported_after(
        "import nemo_runspec.packaging as p\np.PackagingPlan; p.package_code; p.build_packager",
        ("nemo_run", "ray", "torch", "wandb"),
    )
    assert out.stdout.strip() == ""


def test_plain_progress_prints_one_start_line_and_a_summary():
    stream = io.StringIO()
    report = console_progress(stream)
    for i in range(5):
        report(ProgressEvent("packaging code", i, 10, i * 1_000_000, None, 0.5 + i / 10))
    report(ProgressEvent("packaging code", 10, 10, 12_500_000, None, 1.23, done=True))
    lines = stream.getvalue().splitlines()
    assert lines == ["packaging code ...", "packaging code: 10/10 files, 12.5 MB (1.2 s)"]


def test_fast_packaging_reports_nothing(tmp_path):
    from nemo_runspec.packaging.pattern import package_pattern

    (tmp_path / "a.txt").write_text("a")
    events = []
    package_pattern("*.txt", tmp_path, tmp_path / "out" / "x.tar.gz", use_cache=False, progress=events.append)
    assert events == []


def test_cache_prunes_least_recently_used(tmp_path):
    d = tmp_path / "cache"
    d.mkdir()
    import os

    for i in range(5):
        (d / f"fp{i}.tar.gz").write_bytes(b"x" * i)
        PackagingPlan(kind="code", archive_size=i).write_json(d / f"fp{i}.json")
        os.utime(d / f"fp{i}.json", (1000 + i, 1000 + i))
    pcache.prune(d, keep=2)
    assert sorted(p.name for p in d.iterdir()) == ["fp3.json", "fp3.tar.gz", "fp4.json", "fp4.tar.gz"]
    assert pcache.lookup("fp4", d).archive_size == 4
    (d / "fp3.tar.gz").write_bytes(b"changed size")
    assert pcache.lookup("fp3", d) is None


def test_plan_json_round_trip_with_parts(tmp_path):
    plan = PackagingPlan(
        kind="hybrid", files=[FileEntry("a/b.py", "00" * 32, 3, 0o644)],
        parts={"code": PackagingPlan(kind="git", commit="abc", dirty=False)},
    )
    path = plan.write_json(tmp_path / "packaging.json")
    data = json.loads(path.read_text())
    assert data["parts"]["code"]["commit"] == "abc" and data["files"][0]["path"] == "a/b.py"
    assert PackagingPlan.from_dict(data) == plan


def test_cache_dir_follows_env_toml_cache_section(tmp_path, monkeypatch):
    from nemo_runspec.packaging.cache import cache_dir

    env_toml = tmp_path / "env.toml"
    env_toml.write_text(f'[cache]\ndir = "{tmp_path}/shared-cache"\n')
    monkeypatch.setenv("NEMOTRON_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("NEMOTRON_ENV_FILE", raising=False)
    monkeypatch.chdir(tmp_path)  # no env.toml found above an unrelated cwd... except this one
    assert cache_dir() == tmp_path / "shared-cache" / "packages"
    monkeypatch.setenv("NEMOTRON_ENV_FILE", str(tmp_path / "env.toml"))
    assert cache_dir(tmp_path / "explicit") == tmp_path / "explicit"
    env_toml.write_text("[cache]\n")
    assert cache_dir() == tmp_path / "home" / "cache" / "packages"
