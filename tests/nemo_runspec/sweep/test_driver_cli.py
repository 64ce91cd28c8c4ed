"""What -m does for a recipe command (sweep/driver.py): one array per allocation shape shown offline, and commands that do not sweep refusing -m."""

from __future__ import annotations

from tests.nemotron.cli.test_sweep_cli import _calls, _nemotron, _sandbox


def test_a_sweep_over_node_counts_is_one_array_per_allocation_shown_offline(tmp_path):
    sb = _sandbox(tmp_path)
    proc = _nemotron(sb, "nano3", "pretrain", "-c", "tiny", "-m", "run.env.nodes=1,2", "fallback.lr=0.1,0.2",
                     "--batch", "dev", "--dry-run")
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = proc.stdout
    assert out.count("#!/bin/bash") == 2  # each array's script once
    assert "array 1 of 2, --array=0-1 (2 points" in out and "array 2 of 2, --array=2-3 (2 points" in out
    first, second = out.split("array 2 of 2")
    assert "#SBATCH --nodes=1\n" in first and "#SBATCH --nodes=2\n" in second
    assert "0      run.env.nodes=1 fallback.lr=0.1" in first and "3      run.env.nodes=2 fallback.lr=0.2" in second
    assert not _calls(sb, "sbatch") and not _calls(sb, "sacct")  # offline
    outside = _nemotron(sb, "nano3", "pretrain", "-c", "tiny", "-m", "run.env.nodes=1,3", "--batch", "dev",
                        "--dry-run")
    assert outside.returncode == 2 and "not known to work at cpu x 3 nodes" in outside.stderr
    typo = _nemotron(sb, "nano3", "pretrain", "-c", "tiny", "-m", "train.train_iterz=1,2", "--batch", "dev", "-d")
    assert typo.returncode == 2
    assert typo.stderr.strip().splitlines() == [
        "error: unknown key 'train.train_iterz' in override 'train.train_iterz=1' (did you mean 'train.train_iters'?)"]


def test_commands_that_do_not_sweep_refuse_m(tmp_path):
    sb = _sandbox(tmp_path)
    proc = _nemotron(sb, "nano3", "pipe", "-c", "tiny", "-m", "pretrain.train.train_iters=10,20", "--dry-run")
    assert proc.returncode == 2
    assert "-m/--multirun does not apply here: only a recipe command sweeps" in proc.stderr
    assert "Traceback" not in proc.stderr
