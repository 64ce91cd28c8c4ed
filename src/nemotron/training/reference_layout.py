"""An SFT config written the reference's way (``dataset.dataset_root``, ...) read as ours
(``data.data_path``, ...): :func:`reference_sft_layout`, which the training entry point
(:mod:`nemotron.training.entry`, which re-exports it) applies before it reads a config."""

from __future__ import annotations

from typing import Any

#: the reference's SFT ``dataset:`` keys and ours (``dataset.nano3_packed_sft_dir`` is its
#: other name for the data-prep output dir); ``_target_`` keys name the classes we build anyway
REFERENCE_SFT_KEYS = {
    "dataset_root": "data_path", "nano3_packed_sft_dir": "data_path", "seq_length": "seq_length",
    "packed_sequence_specs": "packed_sequence_specs",
}


def reference_sft_layout(cfg: Any, kind: str) -> Any:
    """An SFT config written the reference's way (``dataset.dataset_root`` or
    ``dataset.nano3_packed_sft_dir``, ``dataset.seq_length``, ``dataset.packed_sequence_specs``)
    read as ours (``data.data_path``, ...), interpolations kept; keys of ours win. Other
    configs are returned as they are. See docs/migrating-from-reference.md."""
    from omegaconf import OmegaConf

    if kind != "sft":
        return cfg
    raw = OmegaConf.to_container(cfg, resolve=False)
    dataset = raw.get("dataset")
    if not isinstance(dataset, dict) or not any(k in dataset for k in REFERENCE_SFT_KEYS):
        return cfg
    data = dict(raw.get("data") or {})
    for theirs, ours in REFERENCE_SFT_KEYS.items():
        if theirs in dataset:
            value = dataset.pop(theirs)
            if isinstance(value, dict):
                value = {k: v for k, v in value.items() if k != "_target_"}
            data.setdefault(ours, value)
    dataset.pop("_target_", None)
    raw["data"] = data
    if dataset:
        raw["dataset"] = dataset  # what is left is named by warn_unused_keys
    else:
        raw.pop("dataset")
    return OmegaConf.create(raw)
