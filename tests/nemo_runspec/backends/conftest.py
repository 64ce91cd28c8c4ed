"""A small recipe and env.toml, compiled in-process into real jobs for the backends' tests."""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

HELLO = '''\
# /// script
# [tool.runspec]
# schema = "1"
# name = "demo/hello"
# [tool.runspec.run]
# launch = "direct"
# [tool.runspec.config]
# dir = "./config"
# default = "default"
# ///
print("hello")
'''

ENV_TOML = '''
[here]
executor = "local"

[sl]
executor = "slurm"
account = "acct"
partition = "batch"
container_image = "nvcr.io/nvidia/nemo:25.07"

[sq]
extends = "sl"
squash_dir = "/lustre/sqsh"

[dk]
executor = "docker"
container_image = "python:3.11-slim"
ipc_mode = "host"

[dgx]
executor = "dgxcloud"
container_image = "nvcr.io/nvidia/nemo:25.07"
base_url = "https://dgx.invalid/api/v1"
kube_apiserver_url = "https://k8s.invalid"
client_id = "my-app"
client_secret = "dgxSECRETvalue0123456789"
project_name = "proj"
pvc_nemo_run_dir = "/ws/nemo-run"
pvcs = [{ claimName = "ws", path = "/ws" }]
env_vars = { HF_TOKEN = "hf_backendSECRET0123456789abcdef" }
'''


@pytest.fixture
def compile_hello(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Callable[..., object]:
    """``compile_hello(profile, *passthrough, dry_run=True)``: the demo recipe compiled for
    ``profile`` of ENV_TOML (None: no profile), as ``nemotron run hello.py`` compiles it."""
    from nemo_runspec import parse
    from nemo_runspec.job.compiled import compile_job
    from nemo_runspec.job.run_config import RunConfig

    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "default.yaml").write_text("greeting: hi\n")
    (tmp_path / "hello.py").write_text(HELLO)
    (tmp_path / "env.toml").write_text(textwrap.dedent(ENV_TOML))
    for name in [n for n in __import__("os").environ if n.startswith("NEMOTRON_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("NEMOTRON_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("NEMORUN_HOME", str(tmp_path / "nemorun"))
    monkeypatch.chdir(tmp_path)
    spec = parse(tmp_path / "hello.py")

    def compile_(profile: str | None, *passthrough: str, dry_run: bool = True) -> object:
        run = RunConfig(profile=profile, dry_run=dry_run, env_file=str(tmp_path / "env.toml"),
                        passthrough=passthrough, detach=profile is not None)
        return compile_job(spec, run)

    return compile_
