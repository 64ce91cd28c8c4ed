"""Checkpoints of the fallback trainer: ``<dir>/step_<N>.pt`` holding model, optimizer and step.

Rank 0 writes to a hidden temporary file, fsyncs it and renames it into place,
so a crash never leaves a half-written ``step_*.pt``; :func:`latest_checkpoint`
only considers complete files. Older checkpoints beyond ``keep`` are removed.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

_NAME = re.compile(r"^step_(\d+)\.pt$")


def checkpoint_path(directory: str | os.PathLike[str], step: int) -> Path:
    """``<directory>/step_<step:08d>.pt``."""
    return Path(directory) / f"step_{step:08d}.pt"


def list_checkpoints(directory: str | os.PathLike[str]) -> list[tuple[int, Path]]:
    """``(step, path)`` of the complete checkpoints in ``directory``, oldest first."""
    d = Path(directory)
    if not d.is_dir():
        return []
    found = [(int(m.group(1)), p) for p in d.iterdir() if (m := _NAME.match(p.name)) and p.is_file()]
    return sorted(found)


def latest_checkpoint(directory: str | os.PathLike[str]) -> Path | None:
    """The checkpoint with the highest step, or None."""
    found = list_checkpoints(directory)
    return found[-1][1] if found else None


def save_checkpoint(directory: str | os.PathLike[str], state: dict[str, Any], step: int, *, keep: int = 2) -> Path:
    """Write ``state`` (must include ``step``) atomically as ``step_<step>.pt``; keep the newest ``keep``."""
    import io

    import torch

    from nemo_runspec.paths import ensure_dir, path_error

    d = ensure_dir(directory, action="create the checkpoint directory")
    final = checkpoint_path(d, step)
    tmp = d / f".{final.name}.tmp-{os.getpid()}"
    # Serialized in memory first: torch's own file writer turns a full disk into
    # "[enforce fail at inline_container.cc]", without the errno; a plain write keeps it.
    buffer = io.BytesIO()
    torch.save(state, buffer)
    try:
        with open(tmp, "wb") as f:
            f.write(buffer.getbuffer())
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, final)
    except OSError as exc:
        raise path_error(exc, final, "write the checkpoint", shown=final) from exc
    finally:
        tmp.unlink(missing_ok=True)
    if keep > 0:
        for _, old in list_checkpoints(d)[:-keep]:
            old.unlink(missing_ok=True)
    return final


def load_checkpoint(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Load a checkpoint onto the CPU."""
    import torch

    return torch.load(path, map_location="cpu", weights_only=False)
