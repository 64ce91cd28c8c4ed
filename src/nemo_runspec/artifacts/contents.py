"""What a published version held, and whether it still holds it.

A version published by reference (the usual case: a checkpoint or a data-prep
output dir) is a path the registry does not own: someone may delete or thin it
out later. At publish time the registry records, in the version's metadata under
``contents``, how many files and bytes the path held and, up to
:data:`LISTED` files, each file's size (:func:`summarize`). :func:`missing` then
says what is gone, so a pipeline never skips a stage whose output is no longer
there ("made from the same config and inputs" is not enough).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from nemo_runspec.artifacts.refs import Artifact

#: files whose sizes are listed one by one; beyond this only counts are kept
LISTED = 1000
#: files counted at most (a bigger tree records only that it was big)
COUNTED = 20000
#: files that exist only while something writes (a lock, a lease, a temporary file): not recorded
TRANSIENT = (".lock", ".lease", ".tmp")


def summarize(path: str) -> dict[str, Any] | None:
    """``{"files": n, "bytes": b, "listing": {relpath: size}}`` of a local file or directory
    (``listing`` only up to :data:`LISTED` files; ``files`` None past :data:`COUNTED`);
    None for a URL or a path that does not exist here."""
    if "://" in path or not os.path.exists(path):
        return None
    if os.path.isfile(path):
        return {"files": 1, "bytes": os.path.getsize(path), "listing": {"": os.path.getsize(path)}}
    listing: dict[str, int] = {}
    files = total = 0
    for root, dirs, names in os.walk(path):
        dirs.sort()
        for name in sorted(names):
            if name.endswith(TRANSIENT):
                continue
            full = os.path.join(root, name)
            try:
                size = os.lstat(full).st_size
            except OSError:
                continue
            files += 1
            total += size
            if files <= LISTED:
                listing[os.path.relpath(full, path)] = size
            if files > COUNTED:
                return {"files": None, "bytes": None}
    summary: dict[str, Any] = {"files": files, "bytes": total}
    if files <= LISTED:
        summary["listing"] = listing
    return summary


def missing(path: str, contents: Mapping[str, Any] | None) -> list[str]:
    """What of ``contents`` (a :func:`summarize` record) is gone from ``path``: each missing
    or resized file (relative path, ``"<path>"`` when the whole path is gone); ``[]`` when
    all is there, or when nothing was recorded or the path is not a local one."""
    if "://" in path:
        return []
    if not os.path.exists(path):
        return [path]
    if not contents:
        return []
    listing = contents.get("listing")
    if isinstance(listing, Mapping):
        gone = []
        for rel, size in listing.items():
            full = os.path.join(path, rel) if rel else path
            try:
                if os.lstat(full).st_size != size:
                    gone.append(f"{rel or os.path.basename(path)} (size changed)")
            except OSError:
                gone.append(rel or os.path.basename(path))
        return gone
    now = summarize(path)
    if now and contents.get("files") and now["files"] is not None and now["files"] < contents["files"]:
        return [f"{contents['files'] - now['files']} of its {contents['files']} files"]
    return []


def describe_missing(gone: list[str]) -> str:
    """``model.pt and 2 more`` for a :func:`missing` list."""
    if not gone:
        return ""
    return gone[0] + (f" and {len(gone) - 1} more" if len(gone) > 1 else "")


def gone_reason(artifact: Artifact) -> str:
    """``"<ref> was made from the same config and inputs, but ..."`` when a published
    version's files are gone (:func:`missing`), ``""`` when they are all there."""
    gone = missing(artifact.path, artifact.metadata.get("contents"))
    if not gone:
        return ""
    return (f"{artifact.ref} was made from the same config and inputs, but its files are gone from "
            f"{artifact.path}: {describe_missing(gone)}")
