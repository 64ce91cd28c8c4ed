#!/usr/bin/env python3
"""Regenerate the shipped nano3 sample data and tokenizer (offline, reproducible).

Writes under src/nemotron/recipes/nano3/sample_data/:

- pretrain/docs.jsonl        English text: Python standard-library docstrings ({"id", "text"})
- sft/conversations.jsonl    chat conversations ({"messages": [...]}) built from those docstrings
- sft/arithmetic.jsonl       the single-digit sums as chat turns, in two wordings no RL prompt uses
- rl/problems.jsonl          single-digit sums in four wordings ({"prompt", "answer"}, a few duplicates):
                             facts the tiny chain's 2-layer model learns in its minute (three-digit
                             `+ - *` left every exact match at 0; docs/pipelines.md)
- tokenizer/                 byte-level BPE (vocab 4096) trained on the docstrings and conversations,
                             with a ChatML template

Run with the project venv: ``.venv/bin/python scripts/make_sample_data.py``.
Docstrings depend on the Python version (3.11 for the committed files).
"""

from __future__ import annotations

import importlib
import inspect
import json
import random
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from nemotron.data_prep.tokenizer import train_tokenizer  # noqa: E402

OUT = ROOT / "src" / "nemotron" / "recipes" / "nano3" / "sample_data"
MODULES = [
    "json", "os", "re", "collections", "itertools", "functools", "pathlib", "string", "textwrap",
    "argparse", "logging", "datetime", "random", "statistics", "math", "shutil", "subprocess",
    "threading", "queue", "heapq", "bisect", "csv", "urllib.parse", "difflib", "inspect", "typing",
    "dataclasses", "enum", "contextlib", "io", "tempfile", "zipfile", "tarfile", "hashlib", "base64",
    "uuid", "fractions", "decimal", "calendar", "pprint", "copy", "operator", "sqlite3", "unittest",
    "doctest", "asyncio", "email.message", "http.client", "xml.etree.ElementTree", "configparser",
]
PRETRAIN_BUDGET = 220_000  # bytes of text
SFT_CONVERSATIONS = 300
SFT_ARITHMETIC = ["How much is {a} plus {b}?", "Please add {a} to {b}."]
RL_PHRASINGS = ["What is {a} + {b}? Give only the number.", "Add {a} and {b}. Give only the number.",
                "What is the sum of {a} and {b}? Give only the number.", "Compute {a} + {b}. Give only the number."]


def docstrings() -> list[tuple[str, str]]:
    """(qualified name, docstring) pairs in a fixed order."""
    out: list[tuple[str, str]] = []
    for modname in MODULES:
        mod = importlib.import_module(modname)
        if doc := inspect.getdoc(mod):
            out.append((modname, doc))
        for name in sorted(getattr(mod, "__all__", None) or dir(mod)):
            if name.startswith("_"):
                continue
            obj = getattr(mod, name, None)
            if not (inspect.isclass(obj) or inspect.isfunction(obj) or inspect.isbuiltin(obj)):
                continue
            if getattr(obj, "__module__", modname) not in (modname, f"_{modname}", None) and not inspect.isbuiltin(obj):
                continue
            doc = inspect.getdoc(obj)
            if doc and len(doc) >= 120:
                out.append((f"{modname}.{name}", doc))
    return out


def main() -> None:
    """Write all sample files."""
    docs = docstrings()
    rng = random.Random(20240601)
    (OUT / "pretrain").mkdir(parents=True, exist_ok=True)
    texts = []
    size = 0
    with open(OUT / "pretrain" / "docs.jsonl", "w", encoding="utf-8") as f:
        for i, (name, doc) in enumerate(docs):
            if size >= PRETRAIN_BUDGET:
                break
            text = f"{name}\n\n{doc}"
            f.write(json.dumps({"id": i, "source": name, "text": text}) + "\n")
            texts.append(text)
            size += len(text)

    (OUT / "sft").mkdir(parents=True, exist_ok=True)
    questions = ["What does `{n}` do?", "Explain `{n}` briefly.", "Can you summarise the documentation of `{n}`?",
                 "I'm reading Python code that uses `{n}`. What is it for?"]
    picked = rng.sample(docs, min(SFT_CONVERSATIONS, len(docs)))
    with open(OUT / "sft" / "conversations.jsonl", "w", encoding="utf-8") as f:
        for name, doc in picked:
            para = doc.split("\n\n")[0].replace("\n", " ")
            rest = " ".join(doc.split("\n\n")[1:2]).replace("\n", " ")[:400]
            msgs = []
            if rng.random() < 0.3:
                msgs.append({"role": "system", "content": "You are a concise Python documentation assistant."})
            msgs.append({"role": "user", "content": rng.choice(questions).format(n=name)})
            msgs.append({"role": "assistant", "content": f"`{name}`: {para}"})
            if rest and rng.random() < 0.5:
                msgs.append({"role": "user", "content": "Anything else worth knowing?"})
                msgs.append({"role": "assistant", "content": rest})
            f.write(json.dumps({"messages": msgs}) + "\n")
            texts.append("\n".join(m["content"] for m in msgs))
    # The same sums as the RL problems, asked in other words (no RL prompt appears here):
    # SFT learns the facts in the chat format, the RL stage the plain "prompt -> number" one.
    # Not in `texts`: the tokenizer stays the one trained on the English text above.
    with open(OUT / "sft" / "arithmetic.jsonl", "w", encoding="utf-8") as f:
        for a in range(10):
            for b in range(10):
                for question in SFT_ARITHMETIC:
                    msgs = [{"role": "user", "content": question.format(a=a, b=b)},
                            {"role": "assistant", "content": str(a + b)}]
                    f.write(json.dumps({"messages": msgs}) + "\n")

    (OUT / "rl").mkdir(parents=True, exist_ok=True)
    with open(OUT / "rl" / "problems.jsonl", "w", encoding="utf-8") as f:
        rows = [{"prompt": phrasing.format(a=a, b=b), "answer": str(a + b)}
                for a in range(10) for b in range(10) for phrasing in RL_PHRASINGS]
        rng.shuffle(rows)
        rows += [dict(r) for r in rng.sample(rows, 8)]  # duplicates: the prep keeps one of each
        for r in rows:
            f.write(json.dumps(r) + "\n")

    train_tokenizer(texts, OUT / "tokenizer", vocab_size=4096)
    for p in sorted(OUT.rglob("*")):
        if p.is_file():
            print(f"{p.relative_to(ROOT)}  {p.stat().st_size:,} bytes")


if __name__ == "__main__":
    main()
