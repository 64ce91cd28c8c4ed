"""RL data prep: prompt/answer records -> NeMo-RL JSONL ``train.jsonl`` / ``validation.jsonl``.

Accepted input records (JSONL/Parquet):

- ``{"prompt": str, "answer": str|number}`` (field names configurable), or
- ``{"messages": [{"role", "content"}, ...]}``: everything before the last assistant
  turn is the prompt; the last assistant turn (or the ``answer`` field) is the answer.

Output schema, one JSON object per line::

    {"id": "<16 hex>", "messages": [{"role": "user", "content": "..."}, ...],
     "prompt": "<last user message>", "answer": "<reference answer or null>",
     "task_name": "math"}

``task_name`` (setting ``task_name``) routes the record to a NeMo-RL environment:
NeMo-RL's ``math_hf_data_processor`` and ``AllTaskProcessedDataset`` read it, and
its ``ResponseDataset`` reads ``prompt``/``answer`` as ``input_key``/``output_key``
(checked against NeMo-RL v0.4.0, see docs/data-prep.md).

``id`` is the hash of the normalised prompt (lower-cased, whitespace collapsed).
Records with the same normalised prompt are duplicates: only the first is kept
(``dedupe: true``), and the split is chosen from that hash, so a prompt can never
appear in both train and validation.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from .common import Plan, config_hash, finish, make_plan
from .report import BadRecordLog, atomic_write, write_json
from .runner import run_shards
from .sharding import RL_SPLITS, Shard, assign_split
from .sources import Bad, iter_segment

_WS = re.compile(r"\s+")


def normalise_prompt(messages: list[dict[str, str]]) -> str:
    """The dedupe key text: roles and contents, lower-cased with whitespace collapsed."""
    return "\x1e".join(f"{m['role']}\x1f{_WS.sub(' ', m['content']).strip().lower()}" for m in messages)


def prompt_id(messages: list[dict[str, str]]) -> str:
    """16-hex-digit id of a prompt (sha256 of :func:`normalise_prompt`)."""
    return hashlib.sha256(normalise_prompt(messages).encode("utf-8", "surrogatepass")).hexdigest()[:16]


def normalise_record(rec: Any, params: Mapping[str, Any]) -> dict[str, Any] | Bad:
    """Turn an input record into the output schema, or say why it is bad."""
    if isinstance(rec, Bad):
        return rec
    pf, af, mf = params["prompt_field"], params["answer_field"], params["messages_field"]
    answer = rec.get(af)
    if mf in rec:
        msgs = rec[mf]
        if not isinstance(msgs, list) or not msgs:
            return Bad("wrong_type", f"{mf!r} must be a non-empty list")
        clean = []
        for i, m in enumerate(msgs):
            if not isinstance(m, dict) or not isinstance(m.get("role"), str) or not isinstance(m.get("content"), str):
                return Bad("wrong_type", f"message {i} needs string 'role' and 'content'")
            clean.append({"role": m["role"], "content": m["content"]})
        if clean[-1]["role"] == "assistant":
            answer = clean[-1]["content"] if answer is None else answer
            clean = clean[:-1]
        prompt_msgs = clean
    elif pf in rec:
        if not isinstance(rec[pf], str):
            return Bad("wrong_type", f"{pf!r} is {type(rec[pf]).__name__}, not str")
        prompt_msgs = [{"role": "user", "content": rec[pf]}]
    else:
        return Bad("missing_field", f"no {pf!r} or {mf!r} key")
    users = [m for m in prompt_msgs if m["role"] == "user"]
    if not users or not users[-1]["content"].strip():
        return Bad("empty_text", "no non-empty user prompt")
    if answer is not None and not isinstance(answer, str | int | float):
        return Bad("wrong_type", f"{af!r} is {type(answer).__name__}")
    if isinstance(answer, bool):
        return Bad("wrong_type", f"{af!r} is bool")
    if answer is None and params["require_answer"]:
        return Bad("missing_field", f"no answer ({af!r} or a final assistant turn)")
    return {
        "id": prompt_id(prompt_msgs),
        "messages": prompt_msgs,
        "prompt": users[-1]["content"],
        "answer": None if answer is None else str(answer),
        "task_name": params["task_name"],
    }


def rl_shard(shard: Shard, params: dict[str, Any], out_dir: str) -> dict[str, Any]:
    """Normalise one shard into ``shards/<shard>.jsonl`` (merged and split by the driver)."""
    bad = BadRecordLog(5)
    records = blank = 0
    dest = Path(out_dir) / "shards" / f"{shard.name}.jsonl"
    dest.parent.mkdir(parents=True, exist_ok=True)
    kept = 0
    with atomic_write(dest) as tmp, open(tmp, "w", encoding="utf-8") as f:
        for seg in shard.segments:
            for line, rec in iter_segment(seg, params.get("max_record_bytes")):
                if rec is None:
                    blank += 1
                    continue
                records += 1
                out = normalise_record(rec, params)
                if isinstance(out, Bad):
                    bad.add(seg.url, line, out.reason, out.detail)
                    continue
                f.write(json.dumps(out, ensure_ascii=False, sort_keys=True) + "\n")
                kept += 1
    return {"records": records, "blank_lines": blank, "kept": kept, "bad": bad.to_dict(),
            "outputs": [f"shards/{shard.name}.jsonl"]}


def run_rl(
    cfg: Mapping[str, Any],
    *,
    on_shard_done: Callable[[Shard, dict], None] | None = None,
    stream: Any = None,
) -> dict[str, Any]:
    """Run RL data prep for a config (see ``stage2_rl/config/data_prep/default.yaml``); return the summary."""
    with make_plan(cfg, "rl", "nano3-rl", stream=stream) as plan:
        return plan.reuse(stream) if plan.sealed else _rl(plan, on_shard_done, stream)


def _rl(plan: Plan, on_shard_done: Callable[[Shard, dict], None] | None, stream: Any) -> dict[str, Any]:
    """The rl data prep of a plan that holds its output dir."""
    c, settings = plan.cfg, plan.settings
    fractions = settings.fractions()
    params = {
        "kind": "rl",
        "version": 1,
        "max_record_bytes": settings.max_record_bytes,
        "prompt_field": settings.input.prompt_field,
        "answer_field": settings.input.answer_field,
        "messages_field": settings.input.messages_field,
        "require_answer": settings.require_answer,
        "task_name": settings.task_name,
    }
    results = run_shards(rl_shard, plan.shards, params, plan.out_dir, workers=plan.workers,
                         label="rl", on_shard_done=on_shard_done, stream=stream)
    keep = {o for r in results for o in r["outputs"]}
    plan.settle(keep)

    dedupe = settings.dedupe
    seed = settings.seed
    seen: set[str] = set()
    counts = dict.fromkeys(RL_SPLITS, 0)
    duplicates = 0
    with contextlib.ExitStack() as stack:
        tmps = {s: stack.enter_context(atomic_write(plan.out_dir / f"{s}.jsonl")) for s in RL_SPLITS}
        handles = {s: stack.enter_context(open(p, "w", encoding="utf-8")) for s, p in tmps.items()}
        for shard in plan.shards:
            with open(plan.out_dir / "shards" / f"{shard.name}.jsonl", encoding="utf-8") as f:
                for line in f:
                    rec = json.loads(line)
                    if dedupe and rec["id"] in seen:
                        duplicates += 1
                        continue
                    seen.add(rec["id"])
                    split = assign_split(rec["id"], fractions, seed)
                    handles[split].write(json.dumps(rec, ensure_ascii=False, sort_keys=True) + "\n")
                    counts[split] += 1
    metadata = {
        "kind": "rl",
        "format": "nemo-rl-jsonl-v1",
        "schema": {"id": "str", "messages": "list[{role, content}]", "prompt": "str", "answer": "str|null",
                   "task_name": "str"},
        "files": {s: f"{s}.jsonl" for s in RL_SPLITS},
        "split": fractions,
        "splits": counts,
        "dedupe": dedupe,
        "duplicates_removed": duplicates,
        "inputs": [{"url": f.url, "records": f.num_records} for f in plan.files],
        "sample": settings.sample,
        "config_hash": config_hash(c),
    }
    write_json(plan.out_dir / "metadata.json", metadata)
    summary = {"kind": "rl", "splits": counts, "duplicates_removed": duplicates,
               "train_path": str(plan.out_dir / "train.jsonl"),
               "validation_path": str(plan.out_dir / "validation.jsonl"), "config_hash": metadata["config_hash"]}
    return finish(plan, results, summary, stream=stream, kept=sum(counts.values()), train=counts["train"])
