"""The committed API manifests of every supported Megatron-Bridge and NeMo-RL release, and
stand-in signatures built from them (scripts/megatron_bridge_api.py, scripts/nemo_rl_api.py)."""

from __future__ import annotations

import inspect
import json
from pathlib import Path
from typing import Any

DATA = Path(__file__).parent / "data"
#: Megatron-Bridge manifests, oldest first (nano-v3: the branch in nemo:25.11.nemotron_3_nano)
MB_LABELS = ("nano-v3", "v0.3.0", "v0.3.1", "v0.4.0", "v0.4.2", "v0.5.0", "v0.5.1", "v0.6.0")
#: the manifest of each megatron-bridge version an image of the table carries
MB_OF_VERSION = {"0.3.0rc0": "nano-v3", "0.3.0": "v0.3.0", "0.3.1": "v0.3.1", "0.4.0": "v0.4.0",
                 "0.4.2": "v0.4.2", "0.5.0": "v0.5.0", "0.5.1": "v0.5.1", "0.6.0": "v0.6.0"}
#: NeMo-RL manifests (nano-v3: the branch in nemo-rl:v0.4.0.nemotron_3_nano)
RL_LABELS = ("v0.4.0", "nano-v3", "v0.5.0", "v0.6.0", "v0.7.0")


def mb_manifest(label: str) -> dict[str, Any]:
    return json.loads((DATA / f"megatron_bridge-{label}.json").read_text())


def rl_manifest(label: str) -> dict[str, Any]:
    return json.loads((DATA / f"nemo_rl-{label}.json").read_text())


def signature_of(desc: dict[str, Any], *, varkw: str = "kwargs") -> inspect.Signature:
    """A signature with the release's parameters (the non-required ones defaulting to None)
    and its ``**kwargs`` when it takes them: binding a call against it checks names and counts."""
    kind = inspect.Parameter.POSITIONAL_OR_KEYWORD
    params = [inspect.Parameter(p, kind, **({} if p in desc["required"] else {"default": None}))
              for p in desc["params"]]
    if desc.get("varkw"):
        params.append(inspect.Parameter(varkw, inspect.Parameter.VAR_KEYWORD))
    return inspect.Signature(params)
