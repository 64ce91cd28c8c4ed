"""Progress events of long packaging runs, and ready-made reporters for the CLI.

Packagers stay silent for the first ~0.5 s; after that they call the
``progress`` callback at most ten times a second with a :class:`ProgressEvent`,
and once more with ``done=True`` at the end. The CLI decides how to show it:
:func:`console_progress` gives a Rich spinner on a TTY and a single plain line
otherwise.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import TextIO


@dataclass(frozen=True)
class ProgressEvent:
    """A snapshot of packaging work done so far."""

    stage: str
    files_done: int
    files_total: int | None
    bytes_done: int
    bytes_total: int | None
    elapsed: float
    done: bool = False
    message: str = ""

    def describe(self) -> str:
        """Human text, e.g. ``packaging code: 1,204/3,000 files, 10.2 MB (0.8 s)``."""
        files = f"{self.files_done:,}"
        if self.files_total:
            files += f"/{self.files_total:,}"
        text = f"{self.stage}: {files} files, {self.bytes_done / 1e6:.1f} MB ({self.elapsed:.1f} s)"
        if self.message:
            text += f" {self.message}"
        return text


ProgressCallback = Callable[[ProgressEvent], None]


def console_progress(stream: TextIO | None = None) -> ProgressCallback:
    """A progress callback: Rich status spinner on a TTY, one plain line otherwise.

    The plain form prints ``<stage> ...`` once when progress starts and the
    final summary line when done, so logs stay short.
    """
    stream = stream if stream is not None else sys.stderr
    state: dict[str, object] = {}

    def report(event: ProgressEvent) -> None:
        if stream.isatty():
            status = state.get("status")
            if status is None and not event.done:
                from rich.console import Console

                status = Console(file=stream).status(event.describe())
                status.start()
                state["status"] = status
            if status is not None:
                if event.done:
                    status.stop()  # type: ignore[attr-defined]
                    state.pop("status")
                    print(event.describe(), file=stream)
                else:
                    status.update(event.describe())  # type: ignore[attr-defined]
            return
        if event.done:
            print(event.describe(), file=stream, flush=True)
        elif not state.get("started"):
            state["started"] = True
            print(f"{event.stage} ...", file=stream, flush=True)

    return report
