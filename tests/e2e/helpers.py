"""Job-building helpers shared by the e2e tests that submit through nemo_runspec.slurm."""

from __future__ import annotations

import io
import textwrap
from pathlib import Path

from nemo_runspec.spec.models import Runspec, RunspecResources, RunspecRun


def write_script(dir_: Path, body: str, name: str = "job.py") -> Path:
    """Write the dedented ``body`` to ``dir_/name`` and return its path."""
    path = dir_ / name
    path.write_text(textwrap.dedent(body))
    return path


def runspec(name="e2e/job", launch="direct", nodes=1, image="nvcr.io/never/used:1", gpus_per_node=8):
    """A runspec as ``parse`` returns it, for a script given to prepare_job separately."""
    return Runspec(name=name, script_path=Path("job.py"), image=image, run=RunspecRun(launch=launch),
                   resources=RunspecResources(nodes=nodes, gpus_per_node=gpus_per_node))


def profile(**over):
    """A bare-metal profile for the local cluster (account testacct, partition debug), plus ``over``."""
    base = {"executor": "slurm", "account": "testacct", "partition": "debug",
            "container_image": "", "gpus_per_node": 0, "time": "00:05:00"}
    return base | over


class Out(io.StringIO):
    """Captures the streamed job log."""


def cli_env(tmp_path: Path, cluster, extra: str = "", *, name: str = "cluster", time: str = "00:05:00",
            **env_over: str) -> dict[str, str]:
    """Write ``tmp_path/env.toml`` with one bare-metal profile ``[name]`` on the local
    cluster (its account and default partition, no GPUs, ``time``) plus the TOML lines
    ``extra``, and return the environment that makes the `nemotron` console script use
    it: its own NEMOTRON_HOME (``tmp_path/home``), nemo-run home and artifact registry
    (``tmp_path/reg``), a plain 250-column terminal; ``env_over`` added last."""
    import os

    env_toml = tmp_path / "env.toml"
    env_toml.write_text(textwrap.dedent(f"""
        [{name}]
        executor = "slurm"
        account = "{cluster.account}"
        partition = "{cluster.default_partition}"
        container_image = ""
        gpus_per_node = 0
        time = "{time}"
    """) + textwrap.dedent(extra))
    home = tmp_path / "home"
    env = {k: v for k, v in os.environ.items() if not k.startswith("NEMOTRON_")}
    env.update(NEMOTRON_HOME=str(home), NEMOTRON_ENV_FILE=str(env_toml), NEMORUN_HOME=str(home / "nemorun"),
               NEMOTRON_ARTIFACTS_ROOT=str(tmp_path / "reg"), TERM="dumb", COLUMNS="250")
    env.update(env_over)
    return env


def held_profile_env(tmp_path: Path, cluster, **env_over: str) -> dict[str, str]:
    """An env.toml whose profile [held] keeps its jobs waiting in the queue for an
    hour (BeginTime), and the environment that makes `nemotron` use it (home under
    ``tmp_path``; ``env_over`` added last)."""
    return cli_env(tmp_path, cluster, 'sbatch_options = { begin = "now+1hour" }\n', name="held", **env_over)
