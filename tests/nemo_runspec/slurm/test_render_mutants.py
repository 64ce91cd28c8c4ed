"""render_sbatch's last check (docs/execution.md, dry run): it refuses to return a
script that contains a secret value, wherever the value would have come from."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace as NS
from typing import Any

import nemo_run as run  # noqa: F401 - a required dependency: a broken install fails, never skips
import pytest

from nemo_runspec.errors import ExecutionError
from nemo_runspec.slurm import prepare_job, render_sbatch

SECRET = "hf_renderSecretValue0123456789"


def _job(tmp_path: Path, **over: Any) -> Any:
    kw: dict[str, Any] = dict(
        env={"executor": "slurm", "account": "testacct", "partition": "debug", "container_image": ""},
        mode="batch",
        runspec=NS(name="demo/render", image=None, run=NS(launch="direct"),
                   resources=NS(nodes=1, gpus_per_node=0), env={}),
        packager=run.Packager(), script="main.py", args=["--n", "3"], env_vars={"PLAIN": "a"},
        secrets={"HF_TOKEN": SECRET}, base_dir=tmp_path / "base", exp_id="demo-render_fixed",
    )
    return prepare_job(**(kw | over))


@pytest.mark.parametrize("where", [
    {"args": ["--note", SECRET]},
    {"env_vars": {"NOTE": f"x{SECRET}y"}},
    {"startup_commands": [f"echo {SECRET}"]},
])
def test_a_secret_value_anywhere_in_the_script_is_refused(tmp_path: Path, where: dict[str, Any]) -> None:
    with pytest.raises(ExecutionError, match="secret HF_TOKEN would appear in the sbatch script; refusing"):
        render_sbatch(_job(tmp_path, **where))


def test_every_secret_is_checked_not_only_the_first(tmp_path: Path) -> None:
    job = _job(tmp_path, secrets={"A_TOKEN": "first-secret-1", "B_TOKEN": "second-secret-2"},
               args=["--x", "second-secret-2"])
    with pytest.raises(ExecutionError, match="secret B_TOKEN would appear"):
        render_sbatch(job)


def test_values_too_short_to_search_for_are_not_refused(tmp_path: Path) -> None:
    """Under MIN_SEARCH_LENGTH a value would match ordinary words (``abc``): not searched."""
    text = render_sbatch(_job(tmp_path, secrets={"X_TOKEN": "abc"}, args=["--name", "abc"]))
    assert "--name abc" in text


def test_a_clean_script_renders(tmp_path: Path) -> None:
    text = render_sbatch(_job(tmp_path))
    assert SECRET not in text and ".nemotron-secrets.env" in text
