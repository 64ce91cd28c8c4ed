"""Error types shared by every part of nemo_runspec.

Every user-facing problem is a :class:`NemoRunspecError`. It carries where the
problem is (``path``, ``line``, ``key``) and how to fix it (``hint``), and its
``str()`` is a single line::

    path:line: problem (hint)

of bounded length, in which credential-shaped values (``hf_...``, a URL's
password) are masked (:func:`nemo_runspec.secrets.redact_shapes`), whoever
wrote the message.

The CLI prints exactly that line and exits non-zero; the traceback is shown only
with ``--debug`` or ``NEMOTRON_DEBUG=1``.
"""

from __future__ import annotations

import os
from os import PathLike

#: Characters of a problem and of a hint shown in one error line; the middle of a
#: longer text is left out (a 1,000-profile cycle, a megabyte of bad input).
MAX_PROBLEM, MAX_HINT = 1000, 500


def shorten(text: str, limit: int) -> str:
    """``text``, or its start and end with ``... (N characters left out) ...`` between."""
    if len(text) <= limit:
        return text
    keep = limit - 40
    head, tail = text[: keep * 2 // 3], text[len(text) - keep // 3:]
    return f"{head} ... ({len(text) - len(head) - len(tail)} characters left out) ... {tail}"


class NemoRunspecError(Exception):
    """Base class for all user-facing errors raised by nemo_runspec."""

    def __init__(
        self,
        problem: str,
        *,
        path: str | PathLike[str] | None = None,
        line: int | None = None,
        key: str | None = None,
        hint: str | None = None,
    ) -> None:
        self.problem = problem
        self.path = str(path) if path is not None else None
        self.line = line
        self.key = key
        self.hint = hint
        super().__init__(self.format())

    def format(self) -> str:
        """Render as ``path:line: problem (hint)``, omitting absent parts."""
        where = ""
        if self.path is not None:
            where = self.path if self.line is None else f"{self.path}:{self.line}"
            where += ": "
        text = f"{where}{shorten(self.problem, MAX_PROBLEM)}"
        if self.hint:
            text += f" ({shorten(self.hint, MAX_HINT)})"
        from nemo_runspec.secrets import redact_shapes  # a leaf too; no message shows a credential

        return redact_shapes(" ".join(text.split("\n")))

    def __reduce__(self):  # keep picklable (Ray, multiprocessing)
        return (
            _rebuild,
            (type(self), self.problem, self.path, self.line, self.key, self.hint),
        )


def _rebuild(cls, problem, path, line, key, hint):
    return cls(problem, path=path, line=line, key=key, hint=hint)


class RunspecError(NemoRunspecError, ValueError):
    """Invalid or missing ``[tool.runspec]`` metadata in a recipe script."""


class EnvFileError(NemoRunspecError, ValueError):
    """Invalid env.toml, unknown profile, bad ``extends`` chain or profile key."""


class ConfigError(NemoRunspecError, ValueError):
    """Invalid recipe config, YAML ``defaults`` chain or command-line override."""


class CLIUsageError(NemoRunspecError, ValueError):
    """Bad command-line usage (conflicting or value-less global options)."""


class LocalPathError(NemoRunspecError, ValueError):
    """A local file or directory the command needs cannot be used: not readable,
    not creatable or writable (a read-only ``$NEMOTRON_HOME``), or not the kind
    of file expected (a directory or device where a file belongs)."""


class ExecutionError(NemoRunspecError, RuntimeError):
    """A job could not be built, packaged, submitted or followed."""


class SubmissionError(ExecutionError):
    """The scheduler rejected a job; ``problem`` holds the scheduler's own message."""


class DiskFullError(ExecutionError):
    """A write failed because a file system is full (or a quota is used up): an execution
    error wherever it happens (exit 1), naming the path and the file system."""


class PackagingError(ExecutionError):
    """Code could not be packaged (e.g. uncommitted changes with the git packager)."""


_debug = False


def set_debug(on: bool) -> None:
    """Whether this command runs with ``--debug`` (the CLI sets it from its arguments)."""
    global _debug
    _debug = bool(on)


def debug_enabled() -> bool:
    """True with ``--debug`` (:func:`set_debug`) or ``NEMOTRON_DEBUG=1``: tracebacks are
    shown and summaries fold nothing away."""
    return _debug or os.environ.get("NEMOTRON_DEBUG", "").strip().lower() in ("1", "true", "yes", "on")


def raised_inside(exc: BaseException) -> NemoRunspecError | None:
    """The :class:`NemoRunspecError` that ``exc`` wraps, if any.

    OmegaConf re-raises an error from a resolver (``${art:...}``) as an
    ``InterpolationResolutionError`` saying "ArtifactError raised while resolving
    interpolation: ...", nested once per level of interpolation; our own one-line
    error is at the end of the ``__cause__``/``__context__`` chain, and that is what
    a user should read.
    """
    seen: set[int] = set()
    node: BaseException | None = exc
    while node is not None and id(node) not in seen:
        if isinstance(node, NemoRunspecError):
            return node
        seen.add(id(node))
        node = node.__cause__ or node.__context__
    return None
