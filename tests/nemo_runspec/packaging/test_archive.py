"""The code archive (packaging/_archive.py): progress is reported and a packager survives deepcopy."""

from __future__ import annotations

import copy
import os
import tarfile
from pathlib import Path

from nemo_runspec import parse
from nemo_runspec.packaging.select import build_packager
from tests.nemo_runspec.packaging.test_select import _home  # noqa: F401 - _home: its autouse NEMOTRON_HOME


def test_code_packager_progress_and_deepcopy(repo, tmp_path):
    from nemo_runspec.packaging import _archive

    spec = parse(repo / "src/proj/recipes/train.py")
    events = []
    packager, plan = build_packager({}, runspec=spec, script_path=spec.script_path, progress=events.append)
    assert type(packager).__name__ == "CodePackager"
    clone = copy.deepcopy(packager)
    old_delay = _archive.Ticker.__init__.__kwdefaults__["delay"]
    _archive.Ticker.__init__.__kwdefaults__["delay"] = 0.0  # report from the first file
    try:
        job = tmp_path / "job"
        job.mkdir()
        out = clone.package(Path("/"), str(job), "t")
    finally:
        _archive.Ticker.__init__.__kwdefaults__["delay"] = old_delay
    assert events and events[-1].done and events[-1].files_done == events[-1].files_total == plan.file_count
    assert plan.archive_path == out and plan.reason.startswith("default")
    with tarfile.open(out) as t:
        assert all(m.mtime == t.getmembers()[0].mtime and m.uid == 0 for m in t.getmembers())
    assert os.path.getsize(out) == plan.archive_size
