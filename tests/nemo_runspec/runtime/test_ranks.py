"""The one rank rule shared by artifact resolution and publishing."""

from __future__ import annotations

import pytest

from nemo_runspec.runtime.ranks import RANK_VARS, global_rank


@pytest.fixture(autouse=True)
def _no_rank_env(monkeypatch):
    for var in RANK_VARS:
        monkeypatch.delenv(var, raising=False)


def test_no_launcher_means_rank_zero():
    assert global_rank() == 0


@pytest.mark.parametrize("var", ["RANK", "SLURM_PROCID", "OMPI_COMM_WORLD_RANK", "PMIX_RANK"])
def test_each_launcher_variable_is_read(monkeypatch, var):
    monkeypatch.setenv(var, "3")
    assert global_rank() == 3


def test_torchrun_rank_wins_over_the_slurm_task_id(monkeypatch):
    # torchrun under srun: one Slurm task per node, RANK is the real global rank
    monkeypatch.setenv("SLURM_PROCID", "1")
    monkeypatch.setenv("RANK", "5")
    assert global_rank() == 5


def test_blank_or_garbage_values_are_skipped(monkeypatch):
    monkeypatch.setenv("RANK", " ")
    monkeypatch.setenv("SLURM_PROCID", "x")
    monkeypatch.setenv("OMPI_COMM_WORLD_RANK", "2")
    assert global_rank() == 2


def test_only_rank_zero_publishes_data_prep_output(monkeypatch, tmp_path):
    from nemotron.data_prep.publish import publish_output

    monkeypatch.setenv("SLURM_PROCID", "1")
    cfg = {"publish": {"name": "ds"}}
    assert publish_output(cfg, tmp_path, {}) is None
