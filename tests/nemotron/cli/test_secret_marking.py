"""A profile's secret_env_vars / public_env_vars override the name rule everywhere a value
is shown or written: dry-run tables and job config, `env show`, and the sbatch script
(secret: only in the 0600 secrets file; public: exported as plain)."""

from __future__ import annotations

import os
import subprocess
import textwrap

from tests.nemotron_cli import NEMOTRON

DB = "postgres://u:pw1234567@db/x"


def test_marked_names_win_over_the_name_rule(tmp_path):
    env_toml = tmp_path / "env.toml"
    env_toml.write_text(textwrap.dedent(f"""
        [p]
        executor = "slurm"
        account = "acct"
        partition = "debug"
        container_image = ""
        gpus_per_node = 0
        env_vars = {{ DB_URL = "{DB}", MAX_TOKEN = "4096", HF_TOKEN = "hfsecretzz99" }}
        secret_env_vars = ["DB_URL"]
        public_env_vars = ["MAX_TOKEN"]
    """))
    env = {k: v for k, v in os.environ.items() if not k.startswith("NEMOTRON_")}
    env.update(NEMOTRON_HOME=str(tmp_path / "home"), NEMOTRON_ENV_FILE=str(env_toml), COLUMNS="250", TERM="dumb")

    def nemotron(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(NEMOTRON), *args], env=env, cwd=tmp_path, capture_output=True, text=True,
                              timeout=300, stdin=subprocess.DEVNULL)

    dry = nemotron("nano3", "data", "prep", "pretrain", "-c", "tiny", "--batch", "p", "--dry-run")
    assert dry.returncode == 0, dry.stderr
    shown = dry.stdout + dry.stderr
    assert DB not in shown and "pw1234567" not in shown and "hfsecretzz99" not in shown
    script = shown[shown.index("#!/bin/bash"):]
    assert "export MAX_TOKEN=4096" in script  # public: plain
    assert "export DB_URL" not in script and "export HF_TOKEN" not in script  # secrets file only
    show = nemotron("env", "show", "p")
    assert show.returncode == 0 and DB not in show.stdout and "4096" in show.stdout, show.stderr
    bad = tmp_path / "bad.toml"
    bad.write_text('[p]\nexecutor = "slurm"\nsecret_env_vars = ["1BAD"]\n')
    check = nemotron("env", "check", "--env-file", str(bad))
    assert check.returncode != 0 and "secret_env_vars" in check.stdout + check.stderr


def test_public_mark_on_a_secret_looking_name_lets_slurm_jobs_build(tmp_path):
    """public_env_vars = ["HF_TOKEN"] (a name the rule calls secret) is exported plain in
    the sbatch script of a dry run; the executor follows the same marks as the rest."""
    env_toml = tmp_path / "env.toml"
    env_toml.write_text(textwrap.dedent("""
        [p]
        executor = "slurm"
        account = "acct"
        partition = "debug"
        container_image = ""
        gpus_per_node = 0
        env_vars = { HF_TOKEN = "hfpublicmirror", MAX_TOKEN = "4096" }
        public_env_vars = ["HF_TOKEN"]
    """))
    env = {k: v for k, v in os.environ.items() if not k.startswith("NEMOTRON_")}
    env.update(NEMOTRON_HOME=str(tmp_path / "home"), NEMOTRON_ENV_FILE=str(env_toml), COLUMNS="250", TERM="dumb")
    dry = subprocess.run([str(NEMOTRON), "nano3", "data", "prep", "pretrain", "-c", "tiny", "--batch", "p",
                          "--dry-run"], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=300,
                         stdin=subprocess.DEVNULL)
    assert dry.returncode == 0, dry.stdout + dry.stderr
    shown = dry.stdout + dry.stderr
    script = shown[shown.index("#!/bin/bash"):]
    assert "export HF_TOKEN=hfpublicmirror" in script
    assert "secret HF_TOKEN" not in shown
