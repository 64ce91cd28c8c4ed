"""Rank 0's progress lines: printed, and kept with their time and attempt in progress.jsonl."""

from __future__ import annotations

import json
import time

from nemotron.training import progress


def test_lines_are_printed_and_kept_with_time_and_attempt(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("SLURM_RESTART_COUNT", "2")
    before = time.time()
    log = progress.start(tmp_path)
    try:
        log("[pretrain] step 5/10 | loss 7.5000 | lr 1.00e-03 | 900 tok/s")
        progress.say("published x:v1 (latest) -> /p  [registry: /r]")
    finally:
        log.close()
        progress._current = None
    assert capsys.readouterr().out.splitlines() == [
        "[pretrain] step 5/10 | loss 7.5000 | lr 1.00e-03 | 900 tok/s", "published x:v1 (latest) -> /p  [registry: /r]"]
    rows = [json.loads(x) for x in (tmp_path / progress.FILE).read_text().splitlines()]
    assert [r["line"] for r in rows][1].startswith("published x:v1")
    assert all(r["attempt"] == 2 and before - 1 <= r["t"] <= time.time() + 1 for r in rows)


def test_a_dir_that_cannot_be_written_costs_one_warning_not_the_run(tmp_path, capsys):
    missing = tmp_path / "not" / "there"
    log = progress.ProgressLog(missing)
    log("[pretrain] initial loss 8.3")
    out = capsys.readouterr()
    assert out.out == "[pretrain] initial loss 8.3\n"
    assert out.err.startswith(f"warning: progress lines are not kept ({missing / progress.FILE}: ")
    assert out.err.count("\n") == 1
