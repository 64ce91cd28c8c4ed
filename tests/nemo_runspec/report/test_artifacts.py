"""Which artifact version a job consumed (report/artifacts.py), on a real file registry named by
the job's env.toml: ``latest`` as of the job's start, an exact version as itself, another alias
as it is now, and a note for what cannot be resolved."""

from __future__ import annotations

import calendar
import json
import time

from nemo_runspec.artifacts.registry import ArtifactRegistry
from nemo_runspec.report.artifacts import resolve_consumed
from nemo_runspec.report.model import ArtifactLink


def _registry(tmp_path):
    root = tmp_path / "registry"
    reg = ArtifactRegistry(str(root))
    data = tmp_path / "data"
    data.mkdir()
    for _ in range(3):
        reg.publish("ds", str(data), aliases=("latest", "best") if _ == 0 else ("latest",))
    # v3 was created a day after v1 and v2: a job that started in between consumed v2
    meta = root / "ds" / "v3.json"
    record = json.loads(meta.read_text())
    record["created"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + 86400))
    meta.write_text(json.dumps(record))
    env = tmp_path / "env.toml"
    env.write_text(f'[artifacts]\nroot = "{root}"\n')
    return reg, env


def test_each_reference_is_linked_to_the_version_the_job_saw(tmp_path):
    reg, env = _registry(tmp_path)
    links = [ArtifactLink("ds:latest", key="data"), ArtifactLink("ds:v1"), ArtifactLink("ds:best")]
    notes = resolve_consumed(links, time.time(), env_file=str(env))
    assert notes == []
    assert links[0].ref == "ds:latest = ds:v2 (latest when the job started)"
    assert links[1].ref == "ds:v1 = ds:v1 (exact)"
    assert links[2].ref == "ds:best = ds:v1 (best now)"
    assert links[0].path == str(tmp_path / "data")


def test_what_cannot_be_resolved_is_a_note_and_stays_as_written(tmp_path):
    _, env = _registry(tmp_path)
    links = [ArtifactLink("nope:latest"), ArtifactLink("ds:latest")]
    started = calendar.timegm((2000, 1, 1, 0, 0, 0, 0, 0, 0))
    notes = resolve_consumed(links, started, env_file=str(env))
    assert notes[0].startswith("consumed artifact nope:latest not resolved")
    assert notes[1] == "consumed artifact ds:latest not resolved: no version of ds before the job started"
    assert [link.ref for link in links] == ["nope:latest", "ds:latest"]
    assert resolve_consumed([], None) == []


def test_an_unreadable_registry_leaves_every_reference_as_named(tmp_path):
    bad = tmp_path / "env.toml"
    bad.write_text("[artifacts\n")
    notes = resolve_consumed([ArtifactLink("ds:latest")], None, env_file=str(bad))
    assert len(notes) == 1 and notes[0].startswith("artifact registry not readable here (")
