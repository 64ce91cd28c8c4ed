"""A pipeline's record file and its one JSON line (nemo_runspec.pipeline.records), on real
files under a temporary ``$NEMOTRON_HOME``."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from nemo_runspec.errors import CLIUsageError
from nemo_runspec.pipeline.records import (
    PipeSubmission,
    StagePlan,
    chain_record,
    load_record,
    pipes_dir,
    write_record,
)
from nemo_runspec.pipeline.step import Step


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("NEMOTRON_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


def _skipped(name: str, reason: str) -> StagePlan:
    # of a skipped stage's job the records read its recipe's name (and the first one's profile and
    # env file) only: a stand-in with those, not a compiled job
    job = SimpleNamespace(runspec=SimpleNamespace(name=f"nano3/{name}"), profile=None, env_file=None)
    return StagePlan(step=Step(name, Path(f"{name}.py")), job=job, consumes={}, publishes=f"{name}-out",  # type: ignore[arg-type]
                     depends_on=("a",) if name != "a" else (), key="k", skip=True, reason=reason)


def test_the_record_is_written_atomically_and_read_back(home: Path) -> None:
    sub = PipeSubmission("pipe-x-1", [_skipped("a", "output exists"), _skipped("b", "output exists")])
    path = write_record(sub, launcher="sbatch", run_dir="/r", driver_log="/r/driver.log")
    assert path == home / "pipes" / "pipe-x-1.json" == pipes_dir() / "pipe-x-1.json"
    assert [p.name for p in path.parent.iterdir()] == ["pipe-x-1.json"]  # no temporary file left
    record = load_record("pipe-x-1")
    assert record == json.loads(path.read_text())
    assert (record["id"], record["launcher"], record["run_dir"], record["driver_log"]) == (
        "pipe-x-1", "sbatch", "/r", "/r/driver.log")
    assert [(s["name"], s["recipe"], s["job_id"], s["skipped"], s["depends_on"], s["publishes"])
            for s in record["stages"]] == [("a", "nano3/a", None, True, [], "a-out"),
                                           ("b", "nano3/b", None, True, ["a"], "b-out")]
    assert (record["profile"], record["env_file"]) == (None, None)
    assert "run_dir" not in load_record(write_record(PipeSubmission("pipe-x-2", [])).stem)  # nemo-run: none


def test_an_unknown_pipe_id_is_one_line_naming_a_close_one(home: Path) -> None:
    write_record(PipeSubmission("pipe-abc", []))
    with pytest.raises(CLIUsageError) as err:
        load_record("pipe-abd")
    assert "no pipe 'pipe-abd'" in str(err.value)
    assert "pipe-abc" in (err.value.hint or "")


def test_the_chain_line_of_a_pipe_whose_stages_were_all_skipped() -> None:
    line = chain_record(PipeSubmission("", [_skipped("a", "same config and inputs")]))
    assert line == {"pipe_id": None, "follow": None, "status": None, "cancel": None, "record": None,
                    "stages": [{"stage": "a", "job_id": None, "skipped": "same config and inputs"}]}
    named = chain_record(PipeSubmission("pipe-7", [], record_path=Path("/h/pipes/pipe-7.json")))
    assert (named["follow"], named["cancel"], named["record"]) == (
        "nemotron jobs logs -f pipe-7", "nemotron jobs cancel pipe-7", "/h/pipes/pipe-7.json")
