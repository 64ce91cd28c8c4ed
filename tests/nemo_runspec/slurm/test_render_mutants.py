"""render_sbatch's last check (docs/execution.md, dry run): it refuses to return a
script that contains a secret value, wherever the value would have come from."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import nemo_run as run  # noqa: F401 - a required dependency: a broken install fails, never skips
import pytest

from nemo_runspec.errors import ExecutionError
from nemo_runspec.script_values import KINDS, check, problem
from nemo_runspec.slurm import prepare_job, render_sbatch
from nemo_runspec.slurm import render as render_module
from nemo_runspec.spec.models import Runspec, RunspecResources, RunspecRun

SECRET = "hf_renderSecretValue0123456789"


def _job(tmp_path: Path, **over: Any) -> Any:
    kw: dict[str, Any] = dict(
        env={"executor": "slurm", "account": "testacct", "partition": "debug", "container_image": ""},
        mode="batch",
        runspec=Runspec(name="demo/render", script_path=Path("main.py"), run=RunspecRun(launch="direct"),
                        resources=RunspecResources(nodes=1, gpus_per_node=0)),
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


# --------------------------------------------------------------------------- the dry-run dir


def _spy_launches(monkeypatch: pytest.MonkeyPatch) -> list[tuple[Path, Any]]:
    """Record (base_dir, executor) of each launch render_sbatch builds."""
    seen: list[tuple[Path, Any]] = []
    real = render_module.launch_for

    def spy(job: Any, base_dir: Any, executor: Any = None) -> Any:
        seen.append((Path(base_dir), executor))
        return real(job, base_dir, executor)

    monkeypatch.setattr(render_module, "launch_for", spy)
    return seen


def test_the_render_dir_is_named_for_the_sweep_and_removed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """nemotron-dryrun-<pid>-* in the system temp dir (stale.sweep reads the pid), gone afterwards."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "sys-tmp"))
    (tmp_path / "sys-tmp").mkdir()
    seen = _spy_launches(monkeypatch)
    render_sbatch(_job(tmp_path))
    (base, _), = seen
    assert base.parent == tmp_path / "sys-tmp"
    assert base.name.startswith(f"nemotron-dryrun-{os.getpid()}-")
    assert not base.exists() and list((tmp_path / "sys-tmp").iterdir()) == []


def test_leftovers_of_killed_renders_are_swept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    systmp = tmp_path / "sys-tmp"
    monkeypatch.setattr(tempfile, "tempdir", str(systmp))
    dead = 2**22 + 12345  # above Linux's pid_max: no such process
    for name in (f"nemotron-dryrun-{dead}-abc", f"other-{dead}-abc"):
        (systmp / name).mkdir(parents=True)
    render_sbatch(_job(tmp_path))
    assert sorted(p.name for p in systmp.iterdir()) == [f"other-{dead}-abc"]


def test_the_render_uses_a_clone_with_a_no_op_packager(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen = _spy_launches(monkeypatch)
    job = _job(tmp_path, packager=run.GitArchivePackager())
    render_sbatch(job)
    (_, executor), = seen
    assert executor is not job.executor
    assert type(executor.packager) is run.Packager
    assert isinstance(job.executor.packager, run.GitArchivePackager)  # the job's own is untouched


def test_a_packager_that_links_from_the_remote_dir_is_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen = _spy_launches(monkeypatch)
    packager = run.GitArchivePackager()
    packager.symlink_from_remote_dir = "/remote/code"
    render_sbatch(_job(tmp_path, packager=packager))
    (_, executor), = seen
    assert isinstance(executor.packager, run.GitArchivePackager)
    assert executor.packager.symlink_from_remote_dir == "/remote/code"


def test_a_render_dir_already_gone_does_not_fail_the_render(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Cleanup never fails a render (a tmp cleaner may have removed the dir first)."""
    real = render_module.launch_for

    def vanishing(job: Any, base_dir: Any, executor: Any = None) -> Any:
        launch = real(job, base_dir, executor)

        class Launch:
            def dryrun(self) -> str:
                copy = tmp_path / "script.sbatch"
                copy.write_text(Path(launch.dryrun()).read_text())
                shutil.rmtree(base_dir)
                return str(copy)

        return Launch()

    monkeypatch.setattr(render_module, "launch_for", vanishing)
    assert "#SBATCH --partition=debug" in render_sbatch(_job(tmp_path))


def test_launch_for_takes_the_executor_given(tmp_path: Path) -> None:
    job = _job(tmp_path)
    other = job.executor.clone()
    other.account = "otheracct"
    assert render_module.launch_for(job, tmp_path, other).executor.account == "otheracct"
    assert render_module.launch_for(job, tmp_path).executor.account == "testacct"


def test_a_ray_task_is_the_driver_script_with_its_args_and_entrypoint(tmp_path: Path) -> None:
    job = _job(tmp_path, runspec=Runspec(name="demo/render", script_path=Path("main.py"), run=RunspecRun(launch="ray"),
                                         resources=RunspecResources(nodes=1, gpus_per_node=0)))
    assert job.is_ray
    job.entrypoint = "bash"
    task = render_module.task_for(job)
    assert (task.path, task.args, task.entrypoint) == ("main.py", ["--n", "3"], "bash")
    assert task.metadata == {"use_with_ray_cluster": True}


# --------------------------------------------------------------------------- script_values


@pytest.mark.parametrize(("kind", "value", "because"), [
    ("slurm_name", "1 b", "' '"),
    ("mem", "1X", "'X'"),
    ("mem", "12:", "its shape"),      # ',', ':', '[', ']' are separators: the shape is wrong
    ("slurm_name", "1,,2", "its shape"),
    ("nodelist", "1[1-4]]x;", "';'"),
])
def test_problem_names_the_first_character_not_allowed(kind: str, value: str, because: str) -> None:
    allowed = KINDS[kind][1]
    assert problem(kind, value) == (
        f"{value!r} cannot be used in the batch script (because of {because}); allowed: {allowed}")
    with pytest.raises(ValueError) as info:
        check(kind, value)
    assert str(info.value) == problem(kind, value)
    assert check(kind, "1") == "1"
