"""SFT data prep: chat conversations -> chat-template tokens with assistant-only loss masks,
packed into fixed-length sequences.

Input: JSONL/Parquet records with ``messages: [{"role", "content"}, ...]`` (OpenAI style;
roles ``system``, ``user``, ``assistant``, ``tool``).

Output layout (``output_dir``)::

    train/shard_00000.parquet ...  valid/...  test/...
    metadata.json   pack_size, pad id, tokenizer, template hash, per-split counts
    report.json     record counts and bad records

Each Parquet row is one pack: ``input_ids`` (int32, length ``pack_size``, padded with
``pad_id``), ``loss_mask`` (int8, 1 on assistant content tokens and their end-of-turn
marker, 0 on everything else including padding), ``seq_start_ids`` (int32, the start
offset of each conversation in the pack) and ``num_tokens`` (tokens before padding).
Conversations are never split across packs.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from .common import config_hash, finish, make_plan, remove_stale
from .report import BadRecordLog, write_json
from .runner import run_shards
from .sharding import SPLIT_NAMES, Shard, assign_split
from .sources import Bad, iter_segment
from .tokenizer import TokenizerInfo, load_tokenizer, render_chat

ROLES = ("system", "user", "assistant", "tool")


def validate_messages(rec: Any, field: str) -> list[dict[str, str]] | Bad:
    """Return the conversation's messages, or why the record is bad."""
    if isinstance(rec, Bad):
        return rec
    if field not in rec:
        return Bad("missing_field", f"no {field!r} key")
    msgs = rec[field]
    if not isinstance(msgs, list) or not msgs:
        return Bad("wrong_type", f"{field!r} must be a non-empty list")
    out = []
    for i, m in enumerate(msgs):
        if not isinstance(m, dict) or not isinstance(m.get("role"), str) or not isinstance(m.get("content"), str):
            return Bad("wrong_type", f"message {i} needs string 'role' and 'content'")
        if m["role"] not in ROLES:
            return Bad("unknown_role", f"message {i} role {m['role']!r}")
        out.append({"role": m["role"], "content": m["content"]})
    if not any(m["role"] == "assistant" for m in out):
        return Bad("no_assistant_turn", "")
    if all(not m["content"].strip() for m in out if m["role"] == "assistant"):
        return Bad("empty_text", "assistant turns are empty")
    return out


def tokenize_conversation(tok: Any, template: str, messages: list[dict[str, str]]) -> tuple[list[int], list[int]] | Bad:
    """Tokens and loss mask for one conversation (mask 1 only on assistant content).

    Each message's text is the difference between rendering the conversation up to
    and including it and up to just before it; for assistant messages the
    generation prompt (e.g. ``<|im_start|>assistant\\n``) is split off and masked 0.
    """
    ids: list[int] = []
    mask: list[int] = []
    prev = render_chat(template, [])
    for i, m in enumerate(messages):
        full = render_chat(template, messages[: i + 1])
        if not full.startswith(prev):
            return Bad("template_error", "chat template output is not prefix-stable")
        pieces: list[tuple[str, int]]
        if m["role"] == "assistant":
            gen = render_chat(template, messages[:i], add_generation_prompt=True)
            if gen.startswith(prev) and full.startswith(gen):
                pieces = [(gen[len(prev) :], 0), (full[len(gen) :], 1)]
            else:
                pieces = [(full[len(prev) :], 1)]
        else:
            pieces = [(full[len(prev) :], 0)]
        for text, flag in pieces:
            if text:
                enc = tok.encode(text, add_special_tokens=False).ids
                ids += enc
                mask += [flag] * len(enc)
        prev = full
    return ids, mask


def pack(lengths: list[int], pack_size: int, method: str) -> list[list[int]]:
    """Group item indices into packs of total length <= pack_size, keeping input order within a pack."""
    packs: list[list[int]] = []
    room: list[int] = []
    for i, n in enumerate(lengths):
        if method == "first_fit":
            for b, r in enumerate(room):
                if n <= r:
                    packs[b].append(i)
                    room[b] -= n
                    break
            else:
                packs.append([i])
                room.append(pack_size - n)
        else:
            if packs and n <= room[-1]:
                packs[-1].append(i)
                room[-1] -= n
            else:
                packs.append([i])
                room.append(pack_size - n)
    return packs


def sft_shard(shard: Shard, params: dict[str, Any], out_dir: str) -> dict[str, Any]:
    """Render, tokenize, mask and pack one shard into ``<split>/<shard>.parquet``."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    tok = TokenizerInfo(**params["_tokenizer"]).load()
    template = params["_chat_template"]
    size = params["pack_size"]
    bad = BadRecordLog(5)
    items: dict[str, list[tuple[list[int], list[int]]]] = {s: [] for s in SPLIT_NAMES}
    records = blank = truncated = 0
    for seg in shard.segments:
        for line, rec in iter_segment(seg):
            if rec is None:
                blank += 1
                continue
            records += 1
            msgs = validate_messages(rec, params["messages_field"])
            res = msgs if isinstance(msgs, Bad) else tokenize_conversation(tok, template, msgs)
            if isinstance(res, Bad):
                bad.add(seg.url, line, res.reason, res.detail)
                continue
            ids, mask = res
            if len(ids) > size:
                if params["too_long"] == "drop":
                    bad.add(seg.url, line, "too_long", f"{len(ids)} tokens > pack_size {size}")
                    continue
                ids, mask = ids[:size], mask[:size]
                truncated += 1
                if not any(mask):
                    bad.add(seg.url, line, "too_long", "no assistant token left after truncation")
                    continue
            key = "\x1e".join(f"{m['role']}\x1f{m['content']}" for m in msgs)
            items[assign_split(key, params["split"], params["seed"])].append((ids, mask))
    outputs = []
    stats: dict[str, dict[str, int]] = {}
    for split, convs in items.items():
        stats[split] = {"conversations": len(convs), "packs": 0, "tokens": 0, "loss_tokens": 0}
        if not convs:
            continue
        rows: dict[str, list] = {"input_ids": [], "loss_mask": [], "seq_start_ids": [], "num_tokens": []}
        for group in pack([len(c[0]) for c in convs], size, params["packing"]):
            ids: list[int] = []
            mask: list[int] = []
            starts = []
            for i in group:
                starts.append(len(ids))
                ids += convs[i][0]
                mask += convs[i][1]
            n = len(ids)
            stats[split]["tokens"] += n
            stats[split]["loss_tokens"] += sum(mask)
            rows["input_ids"].append(ids + [params["pad_id"]] * (size - n))
            rows["loss_mask"].append(mask + [0] * (size - n))
            rows["seq_start_ids"].append(starts)
            rows["num_tokens"].append(n)
        stats[split]["packs"] = len(rows["num_tokens"])
        table = pa.table(
            {
                "input_ids": pa.array(rows["input_ids"], type=pa.list_(pa.int32())),
                "loss_mask": pa.array(rows["loss_mask"], type=pa.list_(pa.int8())),
                "seq_start_ids": pa.array(rows["seq_start_ids"], type=pa.list_(pa.int32())),
                "num_tokens": pa.array(rows["num_tokens"], type=pa.int32()),
            }
        )
        dest = Path(out_dir) / split / f"{shard.name}.parquet"
        dest.parent.mkdir(parents=True, exist_ok=True)
        tmp = dest.with_name(dest.name + ".tmp")
        pq.write_table(table, tmp)
        tmp.replace(dest)
        outputs.append(f"{split}/{shard.name}.parquet")
    return {
        "records": records,
        "blank_lines": blank,
        "truncated": truncated,
        "tokens": sum(s["tokens"] for s in stats.values()),
        "splits": stats,
        "bad": bad.to_dict(),
        "outputs": sorted(outputs),
    }


def read_packed(path: str | Path) -> list[dict[str, Any]]:
    """Read one packed Parquet file back as a list of ``{input_ids, loss_mask, seq_start_ids, num_tokens}``."""
    import pyarrow.parquet as pq

    return pq.read_table(path).to_pylist()


def run_sft(
    cfg: Mapping[str, Any],
    *,
    on_shard_done: Callable[[Shard, dict], None] | None = None,
    stream: Any = None,
) -> dict[str, Any]:
    """Run SFT data prep for a config (see ``stage1_sft/config/data_prep/default.yaml``); return the summary."""
    plan = make_plan(cfg, "sft", "nano3-sft")
    c, settings = plan.cfg, plan.settings
    tok = load_tokenizer(settings.tokenizer.path, base=settings.data_root)
    template = settings.tokenizer.chat_template or tok.chat_template
    pack_size, packing, too_long = settings.pack_size, settings.packing, settings.too_long
    pad_token = settings.tokenizer.pad_token or _pad_name(tok)
    pad_id = tok.token_id(pad_token) if pad_token else None
    if pad_id is None:
        pad_id = tok.eod_id(settings.tokenizer.eod_token)
    fractions = settings.fractions()
    params = {
        "kind": "sft",
        "version": 1,
        "messages_field": settings.input.messages_field,
        "pack_size": pack_size,
        "packing": packing,
        "too_long": too_long,
        "pad_id": pad_id,
        "split": fractions,
        "seed": settings.seed,
        "tokenizer_fingerprint": tok.fingerprint,
        "template_sha256": hashlib.sha256(template.encode()).hexdigest(),
        "_tokenizer": {"spec": tok.spec, "tokenizer_json": tok.tokenizer_json, "config": tok.config},
        "_chat_template": template,
    }
    results = run_shards(sft_shard, plan.shards, params, plan.out_dir, workers=plan.workers,
                         label="sft", on_shard_done=on_shard_done, stream=stream)
    keep = {o for r in results for o in r["outputs"]}
    remove_stale(plan.out_dir, keep, tuple(f"{s}/shard_*" for s in SPLIT_NAMES))
    totals = {s: {k: sum(r["splits"][s][k] for r in results) for k in ("conversations", "packs", "tokens", "loss_tokens")}
              for s in SPLIT_NAMES}
    metadata = {
        "kind": "sft",
        "format": "packed-parquet-v1",
        "columns": {"input_ids": "int32[pack_size]", "loss_mask": "int8[pack_size]",
                    "seq_start_ids": "int32[]", "num_tokens": "int32"},
        "pack_size": pack_size,
        "packing": packing,
        "pad_id": pad_id,
        "too_long": too_long,
        "truncated": sum(r["truncated"] for r in results),
        "tokenizer": {"spec": tok.spec, "fingerprint": tok.fingerprint, "vocab_size": tok.vocab_size},
        "chat_template_sha256": params["template_sha256"],
        "split": fractions,
        "splits": totals,
        "files": {s: sorted(o for o in keep if o.startswith(f"{s}/")) for s in SPLIT_NAMES},
        "inputs": [{"url": f.url, "records": f.num_records} for f in plan.files],
        "sample": settings.sample,
        "config_hash": config_hash(c),
    }
    write_json(plan.out_dir / "metadata.json", metadata)
    summary = {
        "kind": "sft",
        "tokens": sum(t["tokens"] for t in totals.values()),
        "conversations": sum(t["conversations"] for t in totals.values()),
        "packs": sum(t["packs"] for t in totals.values()),
        "splits": totals,
        "tokenizer": tok.spec,
        "config_hash": metadata["config_hash"],
    }
    return finish(plan, results, summary, stream=stream)


def _pad_name(tok: TokenizerInfo) -> str | None:
    pad = tok.config.get("pad_token")
    return pad.get("content") if isinstance(pad, dict) else pad
