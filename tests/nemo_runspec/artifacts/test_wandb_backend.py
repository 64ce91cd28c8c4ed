"""WandbBackend with the real wandb package: what an offline publish writes, errors, the job handoff.

Behaviour shared with the fsspec backend is in test_backend_contract.py.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from nemo_runspec.artifacts.errors import ArtifactError, ArtifactPublishError
from nemo_runspec.artifacts.registry import (
    ArtifactRegistry,
    WandbBackend,
    registry_for,
    registry_from_config,
)
from nemo_runspec.artifacts.wandb_backend import RECORD_FILE, RECORD_KEY
from tests import wandb_offline


@pytest.fixture
def wandb_dir(tmp_path: Path, monkeypatch) -> Path:
    d = wandb_offline.offline_env(monkeypatch, tmp_path)
    yield d
    wandb_offline.teardown_wandb()


@pytest.fixture
def payload(tmp_path: Path) -> Path:
    d = tmp_path / "out"
    d.mkdir()
    (d / "blend.json").write_text('{"train": ["1.0", "x"]}')
    (d / "a.bin").write_bytes(b"\x00\x01\x02")
    return d


def test_offline_publish_writes_a_run_with_the_artifact(wandb_dir, payload):
    backend = WandbBackend(entity="team", project="proj")
    art = ArtifactRegistry(backend=backend).publish("ds", payload, metadata={"tokens": 7},
                                                     aliases=("latest", "tiny"))
    assert art.version == 0  # W&B assigns it when the run is synced
    assert art.path == str(payload.resolve()) and art.metadata == {"tokens": 7}
    (run_dir,) = wandb_offline.run_dirs(wandb_dir)
    assert backend.last_offline_run == str(run_dir)
    (run,) = wandb_offline.of_type(run_dir, "run")
    assert (run.entity, run.project, run.job_type) == ("team", "proj", "publish")
    (rec,) = wandb_offline.of_type(run_dir, "artifact")
    assert (rec.name, rec.type, rec.entity, rec.project) == ("ds", "dataset", "team", "proj")
    assert sorted(rec.aliases) == ["latest", "tiny"]
    meta = json.loads(rec.metadata)
    assert meta["tokens"] == 7
    assert meta[RECORD_KEY]["source"] == str(payload.resolve()) and meta[RECORD_KEY]["copy"] is False
    entries = {e.path: e for e in rec.manifest.contents}
    # by reference: each file of the directory as a reference, and the record file
    refs = sorted(e.ref for e in entries.values() if e.ref)
    assert refs == [f"{payload.resolve().as_uri()}/{f}" for f in ("a.bin", "blend.json")]
    assert not any(e.local_path for e in entries.values() if e.ref)  # nothing staged (copied)
    record = json.loads(Path(entries[RECORD_FILE].local_path).read_text())
    assert record == meta[RECORD_KEY]


def test_offline_copy_publish_stages_every_file(wandb_dir, payload):
    WandbBackend(project="proj").publish("ds", str(payload), metadata={}, aliases=["latest"], copy=True)
    (run_dir,) = wandb_offline.run_dirs(wandb_dir)
    (rec,) = wandb_offline.of_type(run_dir, "artifact")
    files = {e.path: Path(e.local_path).read_bytes() for e in rec.manifest.contents}
    assert files["a.bin"] == b"\x00\x01\x02" and files["blend.json"] == b'{"train": ["1.0", "x"]}'
    assert set(files) == {"a.bin", "blend.json", RECORD_FILE}


def test_offline_run_is_one_wandb_sync_would_upload(wandb_dir, payload):
    """`wandb sync --dry-run` (the real CLI, offline) lists the publish run as not yet synced."""
    WandbBackend(project="proj").publish("ds", str(payload), metadata={}, aliases=["latest"], copy=False)
    (run_dir,) = wandb_offline.run_dirs(wandb_dir)
    out = subprocess.run([str(Path(sys.executable).parent / "wandb"), "sync", "--dry-run", str(run_dir)],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert run_dir.name in out.stdout + out.stderr


def test_disabled_mode_publishes_nothing(wandb_dir, payload, monkeypatch):
    monkeypatch.setenv("WANDB_MODE", "disabled")
    with pytest.raises(ArtifactPublishError, match="W&B is disabled"):
        WandbBackend(project="proj").publish("ds", str(payload), metadata={}, aliases=["latest"], copy=False)
    assert wandb_offline.run_dirs(wandb_dir) == []


def test_missing_wandb_is_one_line_naming_the_extra(payload, monkeypatch):
    monkeypatch.setitem(sys.modules, "wandb", None)  # import wandb -> ImportError
    reg = registry_from_config({"backend": "wandb"}, wandb={"project": "proj"})
    for call in (lambda: reg.publish("ds", payload), lambda: reg.resolve("ds:v1"), reg.list):
        with pytest.raises(ArtifactError) as info:
            call()
        assert str(info.value) == ("W&B is configured but the wandb package is not installed "
                                   "(pip install 'nemotron[wandb]')")
        assert info.value.key == "artifacts.backend"


def test_unreachable_server_is_one_line(wandb_dir, monkeypatch):
    """The real wandb.Api against 127.0.0.1:9 (nothing listens): a one-line error, no traceback."""
    monkeypatch.setenv("WANDB_API_KEY", "0" * 40)
    reg = ArtifactRegistry(backend=WandbBackend(entity="team", project="proj", api_timeout=3))
    with pytest.raises(ArtifactError) as info:
        reg.resolve("ds:latest")
    text = str(info.value)
    assert "\n" not in text and "127.0.0.1:9" in text and "WANDB_API_KEY" in text
    import wandb

    # wandb-core would go on retrying and make the process hang at exit: it is ended with the error
    assert wandb.sdk.wandb_setup._singleton is None


def test_a_process_whose_w_and_b_is_unreachable_exits_promptly(tmp_path):
    """The CLI prints the one-line error and exits; wandb's exit hook used to wait on its service for minutes."""
    script = (
        "from nemo_runspec.artifacts.registry import ArtifactRegistry, WandbBackend\n"
        "from nemo_runspec.artifacts.errors import ArtifactError\n"
        "try:\n"
        "    ArtifactRegistry(backend=WandbBackend(entity='team', project='proj', api_timeout=2)).resolve('ds')\n"
        "except ArtifactError as e:\n"
        "    print('error:', e)\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("WANDB_")}
    env.update(WANDB_MODE="offline", WANDB_SILENT="true", WANDB_BASE_URL=wandb_offline.NOWHERE,
               WANDB_API_KEY="0" * 40, WANDB_DIR=str(tmp_path), WANDB_CONFIG_DIR=str(tmp_path),
               WANDB_CACHE_DIR=str(tmp_path), WANDB_DATA_DIR=str(tmp_path),
               HTTP_PROXY=wandb_offline.NOWHERE, HTTPS_PROXY=wandb_offline.NOWHERE)
    procs = [subprocess.Popen([sys.executable, "-c", script], env=env, stdout=subprocess.PIPE, text=True)
             for _ in range(2)]  # the hang came in about one run of three
    for proc in procs:
        out, _ = proc.communicate(timeout=90)
        assert proc.returncode == 0 and "error: cannot use the W&B API" in out


def test_registry_url_round_trip_for_jobs(tmp_path, monkeypatch):
    backend = WandbBackend(entity="team", project="proj", download_root=str(tmp_path / "dl"))
    assert backend.url == f"wandb://team/proj?root={str(tmp_path / 'dl').replace('/', '%2F')}"
    monkeypatch.setenv("NEMOTRON_ARTIFACTS_ROOT", backend.url)
    again = registry_for(None).backend
    assert isinstance(again, WandbBackend)
    assert (again.entity, again.project, again.download_root) == ("team", "proj", str(tmp_path / "dl"))
    assert registry_for(None).location == backend.url
    with pytest.raises(ArtifactError, match="not a W&B registry URL"):
        WandbBackend.from_url("s3://x/y")


def test_job_env_carries_the_wandb_registry_and_its_key(monkeypatch):
    from nemo_runspec.execution.env_vars import split_env_vars

    reg = registry_from_config({"backend": "wandb"}, wandb={"entity": "team", "project": "proj"})
    plain, secrets = split_env_vars({"train": {}}, None, environ={"MY_WB_KEY": "k" * 40},
                                    wandb_section={"api_key_env": "MY_WB_KEY"}, registry=reg)
    assert plain["NEMOTRON_ARTIFACTS_ROOT"] == "wandb://team/proj"
    assert secrets == {"WANDB_API_KEY": "k" * 40}
    assert "k" * 40 not in json.dumps(plain)


def test_nothing_imports_wandb_until_the_backend_is_used():
    from tests.import_probes import imported_after

    code = ("from nemo_runspec.artifacts.registry import registry_from_config\n"
            "r = registry_from_config({'backend': 'wandb'}, wandb={'project': 'p'})\n"
            "r.location\n"
            "import io, sys\nsys.argv = ['nemotron', '--help']\nout, sys.stdout = sys.stdout, io.StringIO()\n"
            "from nemotron.cli.bin.nemotron import main\n"
            "try:\n    main()\nexcept SystemExit:\n    pass\n"
            "sys.stdout = out\n")
    assert imported_after(code, ("wandb",)).stdout.strip() == ""
