"""Reading the user's files and walking their trees without hanging.

Every file the library or the CLI reads on a user's behalf (recipe scripts,
env.toml, YAML configs, data-import metadata) goes through :func:`read_bytes`
or :func:`read_text`: the path is opened without blocking (``O_NONBLOCK``, so a
FIFO named ``train.py`` cannot hang the open), checked to be a regular file on
the open descriptor (a FIFO, a device such as ``/dev/zero``, a socket or a
directory is refused with one line naming the path and what it is), and read
with a size bound. Every tree walk goes through :func:`walk` (or :func:`glob`,
built on it): symlinked directories are followed, a link that points back to a
directory above it (a loop) is reported, never followed round.

Standard library only (the CLI's ``--help`` path imports it); the error type
is the caller's, so a recipe script's problem stays a ``RunspecError`` and an
env.toml's an ``EnvFileError``.
"""

from __future__ import annotations

import errno
import fnmatch
import os
import re
import stat
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from nemo_runspec.errors import NemoRunspecError

#: Default bound on a text file we read (a recipe script, env.toml, a YAML config).
MAX_TEXT_BYTES = 16 << 20

_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def kind_of(mode: int) -> str | None:
    """What a file of ``st_mode`` is, in words (``"a FIFO (named pipe)"``); None for a regular file."""
    if stat.S_ISREG(mode):
        return None
    for test, words in _KINDS:
        if test(mode):
            return words
    return "not a regular file"


def _error(error: type[NemoRunspecError] | None) -> type[NemoRunspecError]:
    if error is not None:
        return error
    from nemo_runspec.errors import LocalPathError

    return LocalPathError


def _size_words(n: int) -> str:
    return f"{n >> 20} MiB" if n >= 1 << 20 else f"{n} bytes"


def read_bytes(path: str | os.PathLike[str], *, what: str = "file", limit: int = MAX_TEXT_BYTES,
               head: bool = False, error: type[NemoRunspecError] | None = None) -> bytes:
    """The bytes of the regular file at ``path``, at most ``limit`` of them.

    ``what`` names the file in messages (``"script"``, ``"env file"``). With
    ``head`` the first ``limit`` bytes are returned whatever the size; without
    it a larger file is refused. A missing file, a directory, a FIFO, a device,
    a socket, a symlink loop or an unreadable file is ``error`` (default
    :class:`~nemo_runspec.errors.LocalPathError`) with one line naming the path
    and what it is; the open never blocks and nothing unbounded is read.
    """
    err = _error(error)
    shown = os.fspath(path)
    try:
        fd = os.open(shown, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise open_error(exc, shown, what, err) from None
    try:
        st = os.fstat(fd)
        kind = kind_of(st.st_mode)
        if kind is not None:
            raise err(f"{what} is {kind}, not a regular file", path=shown,
                      hint=f"give the path of a regular {what}")
        if not head and st.st_size > limit:
            raise err(f"{what} is too large to read ({_size_words(st.st_size)}; the limit is "
                      f"{_size_words(limit)})", path=shown, hint=f"is this really the {what}?")
        os.set_blocking(fd, True)
        chunks: list[bytes] = []
        left = limit + (0 if head else 1)  # one byte more: a file that grew while read
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
    except OSError as exc:
        raise err(f"cannot read {what}: {exc.strerror or exc}", path=shown) from None
    finally:
        os.close(fd)
    data = b"".join(chunks)
    if not head and len(data) > limit:
        raise err(f"{what} is too large to read (over {_size_words(limit)})", path=shown,
                  hint=f"is this really the {what}?")
    return data


def open_error(exc: OSError, shown: str, what: str, error: type[NemoRunspecError]) -> NemoRunspecError:
    """``exc`` (raised opening ``shown``) as one line saying what is at that path."""
    if exc.errno == errno.ENOENT:
        dangling = os.path.islink(shown)
        return error(f"{what} not found" + (" (a symlink to nothing)" if dangling else ""), path=shown)
    if exc.errno == errno.ELOOP:
        return error(f"{what} is a symlink loop", path=shown, hint="the link points back at itself; fix or remove it")
    if exc.errno == errno.EISDIR:
        return error(f"{what} is a directory, not a regular file", path=shown)
    if exc.errno == errno.ENXIO:  # a socket, or a FIFO without a writer on some systems
        return error(f"{what} is a socket or a device without a reader, not a regular file", path=shown)
    return error(f"cannot read {what}: {exc.strerror or exc}", path=shown)


def read_text(path: str | os.PathLike[str], *, what: str = "file", limit: int = MAX_TEXT_BYTES,
              error: type[NemoRunspecError] | None = None, bom: bool = True) -> str:
    """:func:`read_bytes` decoded as UTF-8 (a leading BOM dropped when ``bom``); bytes
    that are not UTF-8 are ``error`` naming the line of the first bad byte."""
    raw = read_bytes(path, what=what, limit=limit, error=error)
    try:
        return raw.decode("utf-8-sig" if bom else "utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise _error(error)(f"{what} is not UTF-8 text (byte 0x{raw[exc.start]:02x}: {exc.reason})",
                            path=os.fspath(path), line=line, hint="save it as UTF-8") from None


# --------------------------------------------------------------------------- tree walks

class TreeLoop(OSError):
    """A symlinked directory that leads back to one of its ancestors."""

    def __init__(self, link: str, target: str) -> None:
        super().__init__(errno.ELOOP, f"symlink loop: {link} leads back to {target}", link)
        self.link = link
        self.target = target

    hint = "remove the link or point it elsewhere"

    def words(self) -> str:
        """What the link is, for an error about :attr:`link` (with :attr:`hint`)."""
        return f"a symlink loop: it leads back to {self.target}, a directory above it"

    def problem(self) -> str:
        """``LINK: a symlink loop: ... (hint)``, one line for an error or a warning."""
        return f"{self.link}: {self.words()} ({self.hint})"


def walk(root: str | os.PathLike[str], *, skip_dir: Callable[[str], bool] | None = None,
         max_depth: int | None = None, on_loop: Callable[[TreeLoop], None] | None = None,
         on_error: Callable[[OSError], None] | None = None) -> Iterator[tuple[str, list[str], list[str]]]:
    """``os.walk(root, followlinks=True)`` that cannot loop.

    Symlinked directories are entered, except one whose directory is already
    being walked above it (a loop): it is listed in ``dirnames`` (so the caller
    may prune it), and entering it calls ``on_loop`` instead (default: raise
    the :class:`TreeLoop`). A name that is a
    symlink loop itself (``a -> a``) is in ``filenames``; reading it fails with
    :func:`read_bytes`'s one line. ``skip_dir(name)`` leaves directories out;
    ``max_depth`` stops that many levels below ``root`` (0: only ``root``).
    Directories that cannot be listed call ``on_error`` (default: skipped).
    """
    top = os.fspath(root)
    try:
        st = os.stat(top)
    except OSError as exc:
        if on_error is not None:
            on_error(exc)
        return
    yield from _walk(top, [(st.st_dev, st.st_ino)], 0, skip_dir, max_depth, on_loop, on_error)


def _walk(top: str, ancestors: list[tuple[int, int]], depth: int, skip_dir: Callable[[str], bool] | None,
          max_depth: int | None, on_loop: Callable[[TreeLoop], None] | None,
          on_error: Callable[[OSError], None] | None) -> Iterator[tuple[str, list[str], list[str]]]:
    dirs: list[tuple[str, tuple[int, int]]] = []
    files: list[str] = []
    try:
        entries = list(os.scandir(top))
    except OSError as exc:
        if on_error is not None:
            on_error(exc)
        return
    for entry in entries:
        try:
            is_dir = entry.is_dir()  # follows symlinks; a looping link is not a dir
            st = entry.stat() if is_dir else None
        except OSError:
            is_dir, st = False, None
        if st is None:
            files.append(entry.name)
        else:
            dirs.append((entry.name, (st.st_dev, st.st_ino)))
    names = [name for name, _ in dirs]
    yield top, names, files  # the caller may prune ``names`` in place
    if max_depth is not None and depth >= max_depth:
        return
    idents = dict(dirs)
    for name in names:
        if skip_dir is not None and skip_dir(name):
            continue
        ident = idents[name]
        if ident in ancestors:
            loop = TreeLoop(os.path.join(top, name), _ancestor_path(top, ancestors, ident))
            if on_loop is None:
                raise loop
            on_loop(loop)
            continue
        yield from _walk(os.path.join(top, name), [*ancestors, ident], depth + 1, skip_dir,
                         max_depth, on_loop, on_error)


def _ancestor_path(top: str, ancestors: list[tuple[int, int]], ident: tuple[int, int]) -> str:
    up = len(ancestors) - 1 - ancestors.index(ident)
    path = top
    for _ in range(up):
        path = os.path.dirname(path)
    return path


_MAGIC = re.compile(r"[*?[]")


def match_segments(parts: list[str], segments: list[str]) -> bool:
    """True when the path ``parts`` match the pattern ``segments``: ``**`` is any number
    of names (none included), other segments are ``fnmatch`` patterns of one name
    (hidden names included, case-sensitive), as ``glob.glob(..., recursive=True,
    include_hidden=True)`` matches."""
    memo: dict[tuple[int, int], bool] = {}

    def at(i: int, j: int) -> bool:
        if (i, j) not in memo:
            if j == len(segments):
                memo[i, j] = i == len(parts)
            elif segments[j] == "**":
                memo[i, j] = at(i, j + 1) or (i < len(parts) and at(i + 1, j))
            else:
                memo[i, j] = i < len(parts) and fnmatch.fnmatchcase(parts[i], segments[j]) and at(i + 1, j + 1)
        return memo[i, j]

    return at(0, 0)


def glob(pattern: str, *, on_loop: Callable[[TreeLoop], None] | None = None) -> list[str]:
    """The paths matching the absolute ``pattern`` (files and directories), sorted.

    Like ``glob.glob(pattern, recursive=True, include_hidden=True)``, but ``**``
    descends through :func:`walk`, so a symlink loop below the pattern's fixed
    part is reported (``on_loop``, default: raise :class:`TreeLoop`) instead of
    followed until the path is too long.
    """
    segments = pattern.split(os.sep)
    fixed: list[str] = []
    for seg in segments:
        if _MAGIC.search(seg) or seg == "**":
            break
        fixed.append(seg)
    if len(fixed) == len(segments):
        return [pattern] if os.path.lexists(pattern) else []
    base = os.sep.join(fixed) or os.sep
    rest = [s for s in segments[len(fixed):] if s not in ("", ".")]
    depth = None if "**" in rest else len(rest) - 1
    file_rest = [*rest[:-1], "*", "**"] if rest and rest[-1] == "**" else rest
    found: list[str] = [base] if rest and all(s == "**" for s in rest) and os.path.isdir(base) else []
    prefix = base.rstrip(os.sep) + os.sep
    for dirpath, dirnames, filenames in walk(base, max_depth=depth, on_loop=on_loop):
        rel_dir = dirpath[len(prefix):].split(os.sep) if dirpath != base else []
        for name in dirnames:
            if match_segments([*rel_dir, name], rest):
                found.append(os.path.join(dirpath, name))
        for name in filenames:  # a trailing "**" stands for at least one name below a file's parent
            if match_segments([*rel_dir, name], file_rest):
                found.append(os.path.join(dirpath, name))
    return sorted(found)
