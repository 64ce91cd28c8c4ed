"""A sandbox for sweep tests: its own NEMOTRON_HOME, artifact registry, env.toml (a
bare-metal Slurm profile `dev` and a container one `box`, secrets in both) and a
stand-in sbatch/sinfo/scontrol on PATH (sbatch records its arguments and answers 4242)."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pytest

SECRET = "hf_sweepTestSecret0123456789abcdef"


@pytest.fixture()
def sandbox(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "sbatch").write_text('#!/bin/sh\necho "$@" >> "$FAKE_SBATCH_LOG"\necho 4242\n')
    (bin_dir / "sinfo").write_text("#!/bin/sh\nexit 1\n")
    (bin_dir / "scontrol").write_text('#!/bin/sh\necho "MaxArraySize            = ${FAKE_MAX_ARRAY:-1001}"\n')
    for f in bin_dir.iterdir():
        f.chmod(0o755)
    env_toml = tmp_path / "env.toml"
    env_toml.write_text(textwrap.dedent(f"""
        [dev]
        executor = "slurm"
        account = "acct"
        partition = "batch"
        container_image = ""
        gpus_per_node = 0
        packager = "code"
        env_vars = {{ HF_TOKEN = "{SECRET}" }}

        [box]
        extends = "dev"
        container_image = "nvcr.io/nvidia/nemo:25.07"
    """))
    home = tmp_path / "home"
    for key in [k for k in os.environ if k.startswith("NEMOTRON_")]:
        monkeypatch.delenv(key)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_SBATCH_LOG", str(tmp_path / "sbatch.log"))
    monkeypatch.setenv("NEMOTRON_HOME", str(home))
    monkeypatch.setenv("NEMOTRON_ENV_FILE", str(env_toml))
    monkeypatch.setenv("NEMORUN_HOME", str(home / "nemorun"))
    monkeypatch.setenv("NEMOTRON_ARTIFACTS_ROOT", str(tmp_path / "registry"))
    return {"root": tmp_path, "home": home, "env_toml": env_toml, "bin": bin_dir,
            "sbatch_log": tmp_path / "sbatch.log"}
