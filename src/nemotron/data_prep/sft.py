"""SFT data prep: chat conversations -> chat-template tokens with assistant-only loss masks,
packed into fixed-length sequences.

Input: JSONL/Parquet records with ``messages: [{"role", "content"}, ...]`` (OpenAI style;
roles ``system``, ``user``, ``assistant``, ``tool``).

Output layout (``output_dir``)::

    train/shard_00000.parquet ...  valid/...  test/...
    packed/train.npy  packed/validation.npy  packed/test.npy  packed/packing_metadata.json
    metadata.json   pack_size, pad id, tokenizer, template hash, per-split counts
    report.json     record counts and bad records

Each Parquet row is one pack: ``input_ids`` (int32, length ``pack_size``, padded with
``pad_id``), ``loss_mask`` (int8, 1 on assistant content tokens and their end-of-turn
marker, 0 on everything else including padding), ``seq_start_ids`` (int32, the start
offset of each conversation in the pack) and ``num_tokens`` (tokens before padding).
Conversations are never split across packs.

``packed/`` holds the same packs in the layout Megatron-Bridge's finetune reads
(checked against :data:`MEGATRON_BRIDGE`): per split, ``np.save`` of an object
array of dicts ``{"input_ids", "loss_mask", "seq_start_id"}`` (lists of ints, no
padding), where ``loss_mask`` is label-aligned: within each conversation,
position ``j`` holds the Parquet mask of position ``j + 1`` (whether the token
predicted from ``j`` is trained) and the conversation's last position holds 0.
``packing_metadata.json`` is the JSON list Megatron-Bridge writes next to its own
packs (one entry per non-empty split, train first, then validation).
"""

from __future__ import annotations

import hashlib
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from nemo_runspec.errors import ExecutionError

from .common import Plan, config_hash, finish, make_plan
from .report import BadRecordLog, atomic_write, write_json
from .runner import run_shards
from .sharding import SPLIT_NAMES, Shard, assign_split
from .sources import Bad, iter_segment
from .tokenizer import TokenizerInfo, load_tokenizer, render_chat

ROLES = ("system", "user", "assistant", "tool")

#: The Megatron-Bridge release whose packed-sequence reader the ``packed/`` files were checked against.
MEGATRON_BRIDGE = "megatron-bridge==0.3.1"
#: Directory of the Megatron-Bridge files, and the file of each split (our split name -> file name).
PACKED_DIR = "packed"
PACKED_FILES = {"train": "train.npy", "valid": "validation.npy", "test": "test.npy"}
PACKING_METADATA = "packing_metadata.json"


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
        for line, rec in iter_segment(seg, params.get("max_record_bytes")):
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
        with atomic_write(dest) as tmp:
            pq.write_table(table, tmp)
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


def megatron_bridge_pack(row: Mapping[str, Any]) -> dict[str, list[int]]:
    """One pack (a Parquet row) as a Megatron-Bridge packed item: no padding, label-aligned loss mask.

    Megatron-Bridge feeds conversation ``k`` (``input_ids[b_k:b_{k+1}]``) as inputs
    ``[b_k, b_{k+1} - 1)`` and labels ``[b_k + 1, b_{k+1})``, and takes the loss mask
    of the inputs' positions; so position ``j`` must say whether token ``j + 1`` is
    trained, and a conversation's last position (no label of its own) is 0.
    """
    n = int(row["num_tokens"])
    starts = [int(x) for x in row["seq_start_ids"]]
    mask = row["loss_mask"]
    bounds = [*starts, n]
    label_mask: list[int] = []
    for a, b in zip(bounds[:-1], bounds[1:], strict=True):
        label_mask += [int(m) for m in mask[a + 1 : b]]
        label_mask.append(0)
    ids = [int(t) for t in row["input_ids"][:n]]
    if len(label_mask) != n or (starts and starts[0] != 0):
        raise ValueError(f"malformed pack: {len(label_mask)} mask positions for {n} tokens, starts {starts[:3]}...")
    return {"input_ids": ids, "loss_mask": label_mask, "seq_start_id": starts}


def packing_stats(packs: list[dict[str, list[int]]], pack_size: int) -> dict[str, Any]:
    """Megatron-Bridge's packing metadata of one split (the keys its packing step records).

    Like Megatron-Bridge, a conversation of ``L`` tokens counts ``L - 1`` (its
    inputs; the last token is only a label).
    """
    per_pack: list[int] = []
    longest = most = 0
    conversations = 0
    for p in packs:
        bounds = [*p["seq_start_id"], len(p["input_ids"])]
        lengths = [b - a - 1 for a, b in zip(bounds[:-1], bounds[1:], strict=True)]
        per_pack.append(sum(lengths))
        longest = max(longest, *lengths)
        most = max(most, len(lengths))
        conversations += len(lengths)
    return {
        "dataset_max_seqlen": longest,
        "max_samples_per_bin": most,
        "packing_factor": round(conversations / len(packs), 2),
        "packing_efficiency": round(sum(per_pack) / len(packs) / pack_size * 100, 2),
        "pack_size": pack_size,
        "min_packed_seqlen": min(per_pack),
    }


def packed_sequence_specs(pack_size: int) -> dict[str, Any]:
    """The values of Megatron-Bridge's ``PackedSequenceSpecs`` for an output dir (paths relative to it)."""
    return {
        "packed_sequence_size": pack_size,
        "packed_train_data_path": f"{PACKED_DIR}/{PACKED_FILES['train']}",
        "packed_val_data_path": f"{PACKED_DIR}/{PACKED_FILES['valid']}",
        "packed_metadata_path": f"{PACKED_DIR}/{PACKING_METADATA}",
    }


def write_megatron_bridge(out_dir: Path, files: Mapping[str, list[str]], pack_size: int) -> dict[str, Any]:
    """Write ``packed/<split>.npy`` and ``packed/packing_metadata.json`` from the Parquet shards.

    ``files`` lists each split's shard files in shard order, so the result depends only
    on the shards (never on how many workers made them). Every split gets a file, an
    empty one when it has no packs. Returns ``{split: packs}``.
    """
    import numpy as np
    import pyarrow.parquet as pq

    dest = out_dir / PACKED_DIR
    dest.mkdir(parents=True, exist_ok=True)
    stats: dict[str, dict[str, Any]] = {}
    counts: dict[str, int] = {}
    for split, name in PACKED_FILES.items():
        packs = [megatron_bridge_pack(row) for f in files.get(split, []) for row in pq.read_table(out_dir / f).to_pylist()]
        items = np.empty(len(packs), dtype=object)
        for i, p in enumerate(packs):
            items[i] = p
        with atomic_write(dest / name) as tmp, open(tmp, "wb") as fh:  # a file object: np.save adds no suffix
            np.save(fh, items, allow_pickle=True)
        counts[split] = len(packs)
        if packs:
            stats[split] = packing_stats(packs, pack_size)
    write_json(dest / PACKING_METADATA, [stats[s] for s in ("train", "valid") if s in stats])
    return counts


def load_megatron_bridge(path: str | Path) -> list[dict[str, Any]]:
    """Read one ``packed/<split>.npy`` back the way Megatron-Bridge does (``np.load(..., allow_pickle=True)``)."""
    import numpy as np

    return list(np.load(path, allow_pickle=True))


def run_sft(
    cfg: Mapping[str, Any],
    *,
    on_shard_done: Callable[[Shard, dict], None] | None = None,
    stream: Any = None,
) -> dict[str, Any]:
    """Run SFT data prep for a config (see ``stage1_sft/config/data_prep/default.yaml``); return the summary."""
    with make_plan(cfg, "sft", "nano3-sft", stream=stream) as plan:
        return plan.reuse(stream) if plan.sealed else _sft(plan, on_shard_done, stream)


def _sft(plan: Plan, on_shard_done: Callable[[Shard, dict], None] | None, stream: Any) -> dict[str, Any]:
    """The sft data prep of a plan that holds its output dir."""
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
        "max_record_bytes": settings.max_record_bytes,
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
    plan.settle(keep)
    totals = {s: {k: sum(r["splits"][s][k] for r in results) for k in ("conversations", "packs", "tokens", "loss_tokens")}
              for s in SPLIT_NAMES}
    files = {s: sorted(o for o in keep if o.startswith(f"{s}/")) for s in SPLIT_NAMES}
    packed_counts = write_megatron_bridge(plan.out_dir, files, pack_size)
    if packed_counts != {s: t["packs"] for s, t in totals.items()}:
        raise ExecutionError(f"packed files hold {packed_counts} packs, the shards reported "
                             f"{ {s: t['packs'] for s, t in totals.items()} }")
    specs = packed_sequence_specs(pack_size)
    print(f"[sft] Megatron-Bridge packs: {plan.out_dir / PACKED_DIR}/ "
          + ", ".join(f"{name} ({packed_counts[s]} packs)" for s, name in PACKED_FILES.items()),
          file=stream or sys.stdout, flush=True)
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
        "files": files,
        "packed": {
            "format": "megatron-bridge-packed-npy",
            "checked_against": MEGATRON_BRIDGE,
            "files": {s: f"{PACKED_DIR}/{name}" for s, name in PACKED_FILES.items()},
            "packing_metadata": f"{PACKED_DIR}/{PACKING_METADATA}",
            "loss_mask": "label-aligned: position j trains token j+1; a conversation's last position is 0",
        },
        "packed_sequence_specs": specs,
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
        "pack_size": pack_size,
        # Megatron-Bridge's PackedSequenceSpecs; paths relative to the output dir (the artifact path)
        "packed_sequence_specs": specs,
        # the same files by absolute path, as the reference's configs read them
        # (${art:data,training_path}, ${art:data,validation_path}, ${art:data,metadata_path})
        "training_path": str(plan.out_dir / specs["packed_train_data_path"]),
        "validation_path": str(plan.out_dir / specs["packed_val_data_path"]),
        "metadata_path": str(plan.out_dir / specs["packed_metadata_path"]),
        "tokenizer": tok.spec,
        "config_hash": metadata["config_hash"],
    }
    return finish(plan, results, summary, stream=stream, kept=summary["conversations"],
                  train=totals["train"]["conversations"])


def _pad_name(tok: TokenizerInfo) -> str | None:
    pad = tok.config.get("pad_token")
    return pad.get("content") if isinstance(pad, dict) else pad
