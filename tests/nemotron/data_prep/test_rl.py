"""RL data prep: normalised NeMo-RL JSONL, dedupe, disjoint train/validation, resume."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

os.environ.setdefault("RAY_DISABLE_USAGE_STATS", "1")

from nemotron.data_prep.rl import run_rl  # noqa: E402


def write(path: Path, lines: list[str]) -> None:
    path.write_text("".join(line + "\n" for line in lines))


def norm(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip().lower()


def read(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_splits_disjoint_and_duplicates_removed(tmp_path):
    lines = []
    for i in range(300):
        lines.append(json.dumps({"prompt": f"What is {i} + {i}?", "answer": 2 * i}))
    # duplicates that differ only in case/whitespace, in another file
    dups = [json.dumps({"prompt": f"  what IS {i}  +\n{i}? ", "answer": str(2 * i)}) for i in range(0, 300, 7)]
    chat = [json.dumps({"messages": [{"role": "system", "content": "be brief"},
                                     {"role": "user", "content": f"Name colour {i}"},
                                     {"role": "assistant", "content": f"colour-{i}"}]}) for i in range(20)]
    write(tmp_path / "a.jsonl", lines)
    write(tmp_path / "b.jsonl", dups + chat + ["not json", json.dumps({"prompt": "no answer"}), json.dumps({"q": 1})])
    out = tmp_path / "out"
    s = run_rl({"input": {"paths": [str(tmp_path / "*.jsonl")]}, "output_dir": str(out), "num_shards": 5,
                "split": "80,20", "workers": 0, "max_bad_fraction": 0.5})
    train, val = read(out / "train.jsonl"), read(out / "validation.jsonl")
    assert len(train) + len(val) == 320
    assert s["duplicates_removed"] == len(dups)
    keys = [norm(r["prompt"]) + "|" + json.dumps(r["messages"][:-1]) for r in train + val]
    assert len(set(keys)) == len(keys)
    assert not {norm(r["prompt"]) for r in train} & {norm(r["prompt"]) for r in val}
    assert 0.1 < len(val) / 320 < 0.3
    byp = {r["prompt"]: r for r in train + val}
    assert byp["What is 21 + 21?"]["answer"] == "42"
    assert byp["What is 21 + 21?"]["messages"] == [{"role": "user", "content": "What is 21 + 21?"}]
    c = byp["Name colour 3"]
    assert c["answer"] == "colour-3" and c["messages"][0] == {"role": "system", "content": "be brief"}
    rep = json.loads((out / "report.json").read_text())
    assert rep["bad"]["by_reason"] == {"invalid_json": 1, "missing_field": 2}
    first_bad_line = len(dups) + len(chat) + 1
    assert [e["line"] for e in rep["bad"]["examples"]] == [first_bad_line, first_bad_line + 1, first_bad_line + 2]


@pytest.mark.slow
def test_rl_ray_workers_and_resume(tmp_path):
    import ray

    write(tmp_path / "a.jsonl", [json.dumps({"prompt": f"p{i % 150}", "answer": "x"}) for i in range(400)])
    cfg = {"input": {"paths": [str(tmp_path / "a.jsonl")]}, "output_dir": str(tmp_path / "out"),
           "num_shards": 4, "split": "50,50", "workers": 1}
    ray.init(address="local", num_cpus=2, include_dashboard=False)
    try:
        calls: list[str] = []

        def crash(shard, result):
            calls.append(shard.name)
            raise RuntimeError("simulated crash")

        with pytest.raises(RuntimeError):
            run_rl(cfg, on_shard_done=crash)
        first = tmp_path / "out" / "shards" / f"{calls[0]}.jsonl"
        st = first.stat()
        again: list[str] = []
        run_rl({**cfg, "workers": 2}, on_shard_done=lambda s, r: again.append(s.name))
        assert calls[0] not in again and len(again) == 3
        assert (first.stat().st_ino, first.stat().st_mtime_ns) == (st.st_ino, st.st_mtime_ns)
        out = tmp_path / "out"
        assert len(read(out / "train.jsonl")) + len(read(out / "validation.jsonl")) == 150
    finally:
        ray.shutdown()
