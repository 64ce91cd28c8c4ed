"""A private copy of a repository's git index, so ``git status`` can keep its caches.

``git status`` in the git and code packagers runs on a copy of the repository's
index under the package cache (``<cache dir>/git-index``), with git's untracked
cache turned on there: the user's own index is only read, never written
(docs/packaging.md, "Caching").
"""

from __future__ import annotations

import os
import time
from pathlib import Path

#: Environment variables that move the index, git dir or work tree: with any of
#: them set, git status runs on the repository's own index.
_GIT_LOCATION_ENV = ("GIT_DIR", "GIT_INDEX_FILE", "GIT_WORK_TREE", "GIT_COMMON_DIR")

#: A private index copy of an older state of the repository's index is removed
#: once the current index has been in place this long (no run can still be using it).
PRIVATE_INDEX_GRACE_S = 60.0


def _git_dir(root: Path) -> Path | None:
    """``root/.git``, or the directory a ``.git`` file points to (worktrees, submodules)."""
    dotgit = root / ".git"
    try:
        if dotgit.is_dir():
            return dotgit
        text = dotgit.read_text(encoding="utf-8", errors="surrogateescape")
    except OSError:
        return None
    if not text.startswith("gitdir: "):
        return None
    target = Path(text[len("gitdir: "):].strip())
    return target if target.is_absolute() else root / target


def private_index(root: Path, directory: Path) -> Path | None:
    """A copy of ``root``'s index in ``directory`` for ``git status`` to work on, or None.

    A warm ``git status`` on 30,000 files spends ~20 ms listing untracked files;
    git's untracked cache (``core.untrackedCache``: per-directory listings checked
    against the directories' stat data and the ignore files' hashes) makes that
    ~1 ms, but it is stored in the index, and turning it on in the user's own
    index would change what their git does. So status runs with
    ``GIT_INDEX_FILE`` on a private copy that git refreshes and keeps the cache
    in; the user's index is only read.

    The copy is named after the index's identity (device, inode, size, mtime_ns,
    ctime_ns and its trailing checksum): any write of the real index (``git add``,
    ``commit``, ``checkout``, a refresh) makes a new copy, so the copy never
    holds another staged state than the index it came from. It keeps the
    original's mtime, so git's racy-timestamp checks decide exactly as they
    would on the original. None (status then uses the real index) without a
    git dir or index, with ``GIT_DIR``-like variables set, or with a split index.
    """
    if any(os.environ.get(v) for v in _GIT_LOCATION_ENV):
        return None
    directory = Path(os.path.abspath(directory))  # git reads GIT_INDEX_FILE relative to the repo, not to us
    gitdir = _git_dir(root)
    if gitdir is None:
        return None
    real = gitdir / "index"
    try:
        fd = os.open(real, os.O_RDONLY)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if st.st_size < 64:
            return None
        trailer = os.pread(fd, 32, st.st_size - 32)  # the checksum (sha1 or sha256) and some bytes before it
        where = os.path.realpath(real)
        import hashlib

        key = hashlib.sha256(where.encode("utf-8", "surrogateescape")).hexdigest()[:16]
        ident = f"{st.st_dev}:{st.st_ino}:{st.st_size}:{st.st_mtime_ns}:{st.st_ctime_ns}:".encode() + trailer
        path = directory / f"{key}-{hashlib.sha256(ident).hexdigest()[:24]}.index"
        if _same_entries(path, os.pread(fd, 12, 0)):
            return path
        try:
            if any(n.startswith("sharedindex.") for n in os.listdir(gitdir)):
                return None  # a split index: its shared part is found next to the real one only
            directory.mkdir(parents=True, exist_ok=True)
            tmp = directory / f".{path.name}.{os.getpid()}.tmp"
            with open(tmp, "wb") as out:
                offset = 0
                while offset < st.st_size:
                    chunk = os.pread(fd, min(1 << 20, st.st_size - offset), offset)
                    if not chunk:
                        break
                    out.write(chunk)
                    offset += len(chunk)
            if offset != st.st_size:
                tmp.unlink(missing_ok=True)
                return None
            os.utime(tmp, ns=(st.st_atime_ns, st.st_mtime_ns))
            os.replace(tmp, path)
        except OSError:
            return None
        from nemo_runspec.runtime.stale import sweep

        sweep(directory.glob(".*.tmp"))  # copies half-written by a run that was killed
        if time.time_ns() - st.st_mtime_ns > PRIVATE_INDEX_GRACE_S * 1e9:
            for old in directory.glob(f"{key}-*.index"):
                if old != path:
                    old.unlink(missing_ok=True)
        return path
    finally:
        os.close(fd)


def _same_entries(copy: Path, real_header: bytes) -> bool:
    """True when ``copy`` exists and its header (signature, version, entry count) is the
    real index's: git treats a missing index as an empty one, and a copy written from
    that would make every tracked file look deleted; a refresh never changes the count."""
    try:
        with open(copy, "rb") as f:
            return f.read(12) == real_header and real_header[:4] == b"DIRC"
    except OSError:
        return False
