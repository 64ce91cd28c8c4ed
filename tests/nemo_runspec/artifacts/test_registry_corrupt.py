"""A corrupted registry file is a one-line ArtifactError naming the file, never a traceback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from nemo_runspec.artifacts.errors import ArtifactError, ArtifactPublishError
from nemo_runspec.artifacts.registry import ArtifactRegistry


@pytest.fixture
def reg(tmp_path: Path) -> ArtifactRegistry:
    """ds:v1 and ds:v2 (by reference), aliases latest -> 2, first -> 1."""
    r = ArtifactRegistry(tmp_path / "registry")
    r.publish("ds", tmp_path, aliases=("latest", "first"))
    r.publish("ds", tmp_path)
    return r


def one_line(exc: pytest.ExceptionInfo) -> str:
    msg = str(exc.value)
    assert "\n" not in msg and "Traceback" not in msg
    return msg


ALIAS_CORRUPTIONS = [
    (b'{"latest": 2,\n  "first": }', ":2: corrupt alias file of artifact 'ds': invalid JSON, expecting value"),
    (b"", ":1: corrupt alias file of artifact 'ds': invalid JSON, expecting value"),
    (b"\xff\xfe{}", ": corrupt alias file of artifact 'ds': not UTF-8 text"),
    (b"[2, 1]", ": corrupt alias file of artifact 'ds': expected an object of alias -> version number, found list"),
    (b'{"latest": "2"}', ": corrupt alias file of artifact 'ds': alias 'latest' maps to '2', not a version number"),
    (b'{"latest": true}', ": corrupt alias file of artifact 'ds': alias 'latest' maps to True, not a version number"),
    (b'{"latest": 0}', ": corrupt alias file of artifact 'ds': alias 'latest' maps to 0, not a version number"),
    (b'{"1st": 1}', ": corrupt alias file of artifact 'ds': invalid alias '1st'"),
]


@pytest.mark.parametrize("content,problem", ALIAS_CORRUPTIONS)
def test_corrupt_alias_file(reg, tmp_path, content, problem):
    path = tmp_path / "registry" / "ds" / "aliases.json"
    path.write_bytes(content)
    for read in (lambda: reg.resolve("ds:latest"), lambda: reg.resolve("ds:v1"), lambda: reg.versions("ds")):
        with pytest.raises(ArtifactError) as info:
            read()
        msg = one_line(info)
        assert msg.startswith(f"{path}{problem} (restore it, or delete it to drop these aliases")
    with pytest.raises(ArtifactPublishError) as info:
        reg.publish("ds", tmp_path)
    assert one_line(info).startswith(f"{path}{problem}; nothing was published (")
    with pytest.raises(ArtifactError) as info:
        reg.set_alias("ds:v1", "prod")
    assert one_line(info).startswith(f"{path}{problem} (")
    assert path.read_bytes() == content and not (tmp_path / "registry" / "ds" / "v3.json").exists()
    path.unlink()  # the hint's way out: versions stay, latest = highest
    assert reg.resolve("ds:latest").version == 2


RECORD_CORRUPTIONS = [
    ('{"path": "/data", ', ":1: corrupt version record of ds:v1: invalid JSON, expecting property name"),
    ("null", ": corrupt version record of ds:v1: expected an object, found NoneType"),
    ('{"metadata": {}}', ": corrupt version record of ds:v1: no 'path' string"),
    ('{"path": 3}', ": corrupt version record of ds:v1: no 'path' string"),
    ('{"path": "/data", "metadata": [1]}', ": corrupt version record of ds:v1: 'metadata' is not an object"),
    ('{"path": "/data", "version": 7}', ": corrupt version record of ds:v1: it says version 7"),
]


@pytest.mark.parametrize("content,problem", RECORD_CORRUPTIONS)
def test_corrupt_version_record(reg, tmp_path, content, problem):
    path = tmp_path / "registry" / "ds" / "v1.json"
    path.write_text(content)
    for read in (lambda: reg.resolve("ds:first"), lambda: reg.resolve("ds:1"), lambda: reg.versions("ds")):
        with pytest.raises(ArtifactError) as info:
            read()
        assert one_line(info).startswith(f"{path}{problem}")
        assert str(info.value).endswith("(restore it, or move it out of the directory to drop version v1)")
    assert reg.resolve("ds:latest").version == 2  # the other versions are unaffected
    assert reg.publish("ds", tmp_path).version == 3  # numbering needs only the file names


def test_unreadable_record_names_the_file(reg, tmp_path):
    path = tmp_path / "registry" / "ds" / "v1.json"
    path.unlink()
    path.mkdir()  # a directory where the record should be
    with pytest.raises(ArtifactError) as info:
        reg.resolve("ds:v1")
    assert one_line(info).startswith(f"{path}: cannot read version record of ds:v1: ")


def test_cli_reports_a_corrupt_alias_file_on_one_line(reg, tmp_path):
    """`nemotron nano3 data import` on a registry with a corrupt alias file: exit 2, one line, nothing written."""
    rl = tmp_path / "rl"
    rl.mkdir()
    (rl / "train.jsonl").write_text(json.dumps({"messages": [{"role": "user", "content": "hi"}]}) + "\n")
    (rl / "validation.jsonl").write_text(json.dumps({"messages": [{"role": "user", "content": "yo"}]}) + "\n")
    alias_file = tmp_path / "registry" / "nano3-rl-data" / "aliases.json"
    reg.publish("nano3-rl-data", rl)
    alias_file.write_text('{"latest": 1,,}')
    env = {k: v for k, v in os.environ.items() if k not in ("NEMOTRON_ENV_FILE", "NEMOTRON_DEBUG")}
    env.update(NEMOTRON_ARTIFACTS_ROOT=str(tmp_path / "registry"), NEMOTRON_HOME=str(tmp_path / "home"),
               COLUMNS="200")
    code = "import sys\nfrom nemotron.cli.bin.nemotron import main\nsys.exit(main())"
    proc = subprocess.run([sys.executable, "-c", code, "nano3", "data", "import", "rl", str(rl), "--alias", "x"],
                          capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
    assert proc.stderr.startswith(f"error: {alias_file}:1: corrupt alias file of artifact 'nano3-rl-data': "
                                  "invalid JSON, expecting property name enclosed in double quotes; "
                                  "nothing was published (restore it")
    assert sorted(p.name for p in alias_file.parent.iterdir()) == [".lock", "aliases.json", "v1.json"]
