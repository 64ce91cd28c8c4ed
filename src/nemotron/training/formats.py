"""Model checkpoint formats: what each stage writes, what each stage reads, and the check
a consumer makes before it starts.

Every model artifact records its format in its metadata (``format``): the training
stages when they publish (:func:`produced`), ``nano3 convert`` (``hf``), and ``nemotron
nano3 model import`` (from the layout it finds). A stage that starts from a model
(:data:`MODEL_KEYS`) checks, before anything is built, that the model is in the format
its backend loads (:func:`needed`); a mismatch is one line naming the artifact, the
key, both formats and the fix. An artifact without a recorded format (published before
formats were recorded) is read from its directory's layout (:func:`detect`).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from nemo_runspec.errors import ConfigError, NemoRunspecError

#: the formats, and what each one is on disk
FORMATS = {
    "megatron-dist": "a Megatron distributed checkpoint (latest_checkpointed_iteration.txt, iter_*/)",
    "hf": "a Hugging Face model (config.json and its weights)",
    "fallback-pt": "the CPU fallback's step_*.pt checkpoints",
    "nemo-rl": "a NeMo-RL GRPO checkpoint dir (step_*/policy/weights, its own DCP or Megatron layout)",
}
#: the config key naming the model each consuming stage starts from (``${art:model,path}``)
MODEL_KEYS = {"sft": "checkpoint.pretrained_checkpoint", "rl": "policy.model_name",
              "convert": "convert.megatron_path", "eval": "deployment.checkpoint_path"}
_ITER = re.compile(r"^iter_\d+$")
_STEP = re.compile(r"^step_\d+\.pt$")
_RL_STEP = re.compile(r"^step_\d+$")


def produced(kind: str, backend: str) -> str:
    """The format ``kind`` writes with ``backend`` (``native`` or ``torch``)."""
    if backend != "native":
        return "fallback-pt"
    return {"rl": "nemo-rl", "convert": "hf"}.get(kind, "megatron-dist")


def needed(kind: str, backend: str) -> str | None:
    """The format ``kind``'s ``backend`` loads its starting model in (None: it reads no model)."""
    if kind not in MODEL_KEYS:
        return None
    if backend != "native":
        return "fallback-pt"
    return {"sft": "megatron-dist", "convert": "megatron-dist"}.get(kind, "hf")


def detect(path: str | Path) -> str | None:
    """The format of the checkpoint directory ``path`` from its layout (None: none of them)."""
    root = Path(path)
    if not root.is_dir():
        return None
    names = [p.name for p in root.iterdir()]
    if "latest_checkpointed_iteration.txt" in names or any(_ITER.match(n) for n in names):
        return "megatron-dist"
    if "config.json" in names:
        return "hf"
    if any(_STEP.match(n) for n in names):
        return "fallback-pt"
    if any(_RL_STEP.match(n) and (root / n / "policy").is_dir() for n in names):
        return "nemo-rl"
    return None


def _artifact_key(raw: Any) -> str | None:
    m = re.search(r"\$\{art:([^,}]+)", str(raw or ""))
    return m.group(1).strip() if m else None


def _recorded(raw_cfg: dict[str, Any], key: str) -> tuple[str | None, str | None]:
    """``(recorded format, artifact ref)`` of the artifact ``key``'s value names (Nones when it
    names none). Resolved through the job's pinned answers on a multi-rank job."""
    from nemo_runspec.config.resolvers import lookup, reference_for
    from nemo_runspec.runtime.dotted import lookup as dotted

    art_key = _artifact_key(dotted(raw_cfg, key))
    if art_key is None:
        return None, None
    ref = reference_for(art_key, raw_cfg)
    art = lookup(ref)
    fmt = (art.get("metadata") or {}).get("format")
    return (str(fmt) if fmt else None), str(art.get("ref") or ref)


def check_model_input(kind: str, cfg: Any, backend: str, *, resolve: Any) -> str | None:
    """Check that the model ``kind`` starts from is in the format its ``backend`` loads; returns
    the format found (None: no model named, or not resolvable here: the stage reports that).

    ``resolve(cfg, key) -> path`` resolves the key (:func:`nemotron.training.entry.resolve_path_key`).
    Raises a one-line :class:`ConfigError` on a mismatch.
    """
    want = needed(kind, backend)
    key = MODEL_KEYS.get(kind)
    if want is None or key is None:
        return None
    from omegaconf import OmegaConf

    from nemo_runspec.runtime.dotted import lookup as dotted

    raw = cfg if isinstance(cfg, dict) else OmegaConf.to_container(cfg, resolve=False)
    if dotted(raw, key) in (None, ""):
        return None
    if backend != "native" and (raw.get("fallback") or {}).get("init_from_pretrained") is False:
        return None  # the fallback was told not to read it
    try:
        path = resolve(cfg if not isinstance(cfg, dict) else OmegaConf.create(cfg), key)
        recorded, ref = _recorded(raw, key)
    except NemoRunspecError:
        return None
    found = recorded or detect(path)
    if found is None or found == want:
        return found
    what = f"{ref} ({path})" if ref else path
    loader = {"hf": "loads a Hugging Face model", "megatron-dist": "loads a Megatron distributed checkpoint",
              "fallback-pt": "reads the CPU fallback's step_*.pt"}[want]
    raise ConfigError(f"nano3/{kind}: the model {what} is {found}; this stage's backend {loader} ({want})",
                      key=key, hint=_fix(kind, found, want))


def _fix(kind: str, found: str, want: str) -> str:
    if (found, want) == ("megatron-dist", "hf"):
        return ("export it with `nemotron nano3 convert` (Megatron-Bridge's AutoBridge) and start from "
                "its hf artifact (nano3-sft-model-hf), or import a Hugging Face model: nemotron nano3 model import")
    if found == "nemo-rl":
        return ("export it with NeMo-RL's own converter in the RL image (examples/converters/convert_dcp_to_hf.py, "
                "or convert_megatron_to_hf.py for its Megatron backend), then `nemotron nano3 model import rl PATH`")
    if want == "fallback-pt" or found == "fallback-pt":
        return "the CPU fallback and the native backends do not read each other's checkpoints: " \
               "use the model of the same chain (-c tiny for the fallback chain)"
    return f"point {MODEL_KEYS[kind]} at a {want} model (nemotron nano3 model import registers one)"
