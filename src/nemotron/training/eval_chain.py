"""The chain's table: the evaluated model beside the models it was trained from.

Every checkpoint of the fallback trainer records the checkpoint its weights started
from (``init_from``, :func:`nemotron.training.loop.train`). Walking back from the
evaluated model gives the chain that made it (in the nano3 pipe: RL smoke <- SFT <-
pretrain); each model of it is evaluated on the same tasks and data, below a uniform
guess over the vocabulary, whose perplexity is the vocabulary size by definition
(cross-entropy ``ln V`` on every token). The table is the last thing the evaluation
prints before its summary line, so the tiny chain ends in it.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

#: ancestors followed at most (a chain is a handful of stages; a loop of records must not hang)
MAX_DEPTH = 16


def lineage(info: dict[str, Any]) -> list[dict[str, Any]]:
    """The checkpoints the evaluated model (``info`` of :func:`~nemotron.training.evaluate.load_model`)
    was trained from, oldest first: ``{"checkpoint", "step", "stage"}`` each. A recorded
    checkpoint that is gone ends the walk with ``{"checkpoint", "missing": True}``."""
    from .checkpoint import load_checkpoint

    found: list[dict[str, Any]] = []
    seen = {str(info.get("checkpoint"))}
    origin = info.get("init_from")
    while isinstance(origin, dict) and origin.get("checkpoint") and len(found) < MAX_DEPTH:
        path = str(origin["checkpoint"])
        if path in seen:
            break
        seen.add(path)
        if not Path(path).is_file():
            found.append({"checkpoint": path, "step": origin.get("step"), "missing": True})
            break
        state = load_checkpoint(path)
        found.append({"checkpoint": path, "step": int(state.get("step", 0)), "stage": state.get("task")})
        origin = state.get("init_from")
    return found[::-1]


def evaluate_chain(info: dict[str, Any], metrics: dict[str, float], *,
                   load: Callable[[str], tuple[Any, dict[str, Any]]],
                   run: Callable[[Any], tuple[dict[str, Any], dict[str, float]]]) -> list[dict[str, Any]]:
    """Rows of the chain's table: the uniform baseline, each ancestor of the evaluated
    model (``load(path)`` -> model and info, ``run(model)`` -> task results and metrics),
    then the evaluated model itself with its ``metrics``."""
    vocab = int(info["model_config"]["vocab_size"])
    rows: list[dict[str, Any]] = [{"model": "uniform", "vocab_size": vocab, "metrics": {"perplexity": float(vocab)}}]
    for ancestor in lineage(info):
        if ancestor.get("missing"):
            rows.append({"model": "missing", **ancestor, "metrics": {}})
            continue
        model, _ = load(ancestor["checkpoint"])
        tasks, found = run(model)
        row = {"model": ancestor["stage"], **ancestor, "metrics": found}
        if "answer_exact_match" in tasks:
            row["answers"] = [tasks["answer_exact_match"]["correct"], tasks["answer_exact_match"]["samples"]]
        rows.append(row)
    rows.append({"model": info.get("stage"), "checkpoint": info.get("checkpoint"), "step": info.get("step"),
                 "metrics": dict(metrics), "evaluated": True})
    return rows


def table_lines(rows: list[dict[str, Any]], tasks: dict[str, Any]) -> list[str]:
    """The chain's table as aligned lines: one row per model, perplexity on held-out text,
    and the teacher-forced loss on the answers with the exact-match accuracy of greedy
    answers (the columns of the tasks that ran). The answer loss shows a stage learning
    the answers while too few come out exactly right to move the accuracy."""
    held = tasks.get("heldout_perplexity")
    answers = tasks.get("answer_exact_match")
    header = ["model", "step"]
    if held:
        header.append("perplexity")
    if answers:
        header += ["answer loss", "exact match"]
    out = [header]
    for row in rows:
        if row["model"] == "uniform":
            cells = ["uniform guess (= vocab size)", "-"]
        elif row["model"] == "missing":
            cells = [f"(gone: {row['checkpoint']})", str(row.get("step") or "-")]
        else:
            cells = [f"after {row['model']}" + (" (evaluated)" if row.get("evaluated") else ""), str(row["step"])]
        m = row.get("metrics") or {}
        if held:
            cells.append(f"{m['perplexity']:.1f}" if "perplexity" in m else "-")
        if answers:
            cells.append(f"{m['answer_loss']:.3f}" if "answer_loss" in m else "-")
            if "exact_match" not in m:
                cells.append("-")
            else:
                correct, total = row.get("answers") or (answers["correct"], answers["samples"])
                cells.append(f"{m['exact_match']:.1%} ({correct}/{total})")
        out.append(cells)
    widths = [max(len(r[i]) for r in out) for i in range(len(header))]
    lines = ["  " + "  ".join(c.ljust(w) if i < 2 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths, strict=True)))
             for r in out]
    what = []
    if held:
        what.append(f"perplexity on {held['tokens']} held-out tokens ({held['split']} split)")
    if answers:
        what.append(f"exact-match answers to {answers['samples']} {answers['split']} prompts")
    return [f"[eval] the chain: {'; '.join(what)}", *lines]
