"""The suite-wide W&B guard of tests/conftest.py: on in every test, in the processes a
test starts, and a test's own monkeypatch values win for that test only."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.conftest import WANDB_GUARD


def test_every_test_runs_with_wandb_offline_and_nowhere_to_connect():
    assert {k: os.environ.get(k) for k in WANDB_GUARD} == {
        "WANDB_MODE": "offline", "WANDB_BASE_URL": "http://127.0.0.1:9", "WANDB_ERROR_REPORTING": "false"}


def test_a_process_a_test_starts_inherits_the_guard():
    out = subprocess.run([sys.executable, "-c", "import os; print(os.environ['WANDB_MODE'], os.environ['WANDB_BASE_URL'])"],
                         capture_output=True, text=True, check=True).stdout.split()
    assert out == ["offline", "http://127.0.0.1:9"]


@pytest.mark.parametrize("step", ["override", "restored"])
def test_a_test_may_set_other_values_with_monkeypatch(step, monkeypatch):
    if step == "override":
        monkeypatch.setenv("WANDB_MODE", "disabled")
        monkeypatch.delenv("WANDB_BASE_URL")
        assert os.environ["WANDB_MODE"] == "disabled" and "WANDB_BASE_URL" not in os.environ
    else:  # the next test has the guard back
        assert os.environ["WANDB_MODE"] == "offline" and os.environ["WANDB_BASE_URL"] == "http://127.0.0.1:9"
