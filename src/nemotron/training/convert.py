"""``nano3/convert``: the SFT checkpoint (Megatron distributed) exported to Hugging Face for NeMo-RL.

Megatron-Bridge's own export, as its ``examples/conversion/convert_checkpoints.py
export`` (0.6: ``scripts/conversion/convert.sh export``, CPU path ``cpu_backend.py``)
does it in the release inside the image (:attr:`BridgeLine.export_factory
<nemotron.training.bridge_lines.BridgeLine.export_factory>`):

- up to 0.4.x: ``bridge = AutoBridge.from_hf_pretrained(hf_model, trust_remote_code=...)``;
- 0.5 and later: ``bridge = AutoBridge.from_auto_config(megatron_path, hf_model,
  trust_remote_code=...)`` (the config synthesized from the checkpoint and the reference);
- then ``bridge.export_ckpt(megatron_path=..., hf_path=..., show_progress=False, strict=...)``,
  which loads the checkpoint on CPU (gloo) and writes the Hugging Face model.

``convert.megatron_path`` is the SFT model artifact (``${art:model,path}``),
``convert.hf_model`` the Hugging Face model it was trained from (its config, tokenizer
and modeling code), ``checkpoint.save`` the output directory, published as
``publish.name`` with format ``hf``. When ``convert.input_format`` equals
``convert.output_format`` (the CPU fallback chain hands ``fallback-pt`` from SFT to RL)
there is nothing to convert: the pipe skips the stage and the script says so and exits 0.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from nemo_runspec.errors import ConfigError

from .bridge_lines import AUTO_BRIDGE, BridgeLine
from .megatron_bridge import import_target


def nothing_to_convert(cfg: Mapping[str, Any]) -> str | None:
    """Why the stage has nothing to do (the formats match), or None."""
    section = cfg.get("convert") or {}
    source, target = section.get("input_format"), section.get("output_format")
    if source and source == target:
        return f"formats already match ({source} -> {target}): the next stage reads the model as it is"
    return None


def export_calls(line: BridgeLine | None = None) -> list[str]:
    """The two calls the export makes on ``line`` (for the dry run and messages)."""
    factory = line.export_factory if line is not None else "from_hf_pretrained"
    make = (f"{AUTO_BRIDGE}.from_auto_config(megatron_path, hf_model, trust_remote_code=...)"
            if factory == "from_auto_config" else f"{AUTO_BRIDGE}.from_hf_pretrained(hf_model, trust_remote_code=...)")
    return [make, "bridge.export_ckpt(megatron_path=..., hf_path=..., show_progress=False, strict=...)"]


def run(cfg: Mapping[str, Any], *, importer: Callable[[str], Any] = import_target,
        line: BridgeLine | None = None) -> int:
    """Export ``convert.megatron_path`` to ``checkpoint.save`` as a Hugging Face model; returns 0."""
    from .entry import job_path
    from .megatron_bridge import installed_line

    line = line or installed_line()
    section = cfg.get("convert") or {}
    megatron_path, hf_model = section.get("megatron_path"), section.get("hf_model")
    out = (cfg.get("checkpoint") or {}).get("save")
    for key, value in (("convert.megatron_path", megatron_path), ("convert.hf_model", hf_model),
                       ("checkpoint.save", out)):
        if not value:
            raise ConfigError(f"{key} is not set", key=key,
                              hint="see src/nemotron/recipes/nano3/stage1_sft/config/convert/default.yaml")
    hf_path = job_path(str(out))
    trust = bool(section.get("trust_remote_code", True))
    print(f"[convert] Megatron-Bridge {line.name}: {megatron_path} -> {hf_path} (reference {hf_model})", flush=True)
    auto_bridge = importer(AUTO_BRIDGE)
    if line.export_factory == "from_auto_config":
        bridge = auto_bridge.from_auto_config(str(megatron_path), str(hf_model), trust_remote_code=trust)
    else:
        bridge = auto_bridge.from_hf_pretrained(str(hf_model), trust_remote_code=trust)
    bridge.export_ckpt(megatron_path=str(megatron_path), hf_path=hf_path, show_progress=False,
                       strict=bool(section.get("strict", False)))
    print(f"[convert] wrote the Hugging Face model to {hf_path}", flush=True)
    return 0
