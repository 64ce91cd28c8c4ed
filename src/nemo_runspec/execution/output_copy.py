"""Pass a child process's stdout and stderr on as they come, and keep the end of them.

A run here (:mod:`nemo_runspec.execution.local`) prints the job's output as the
job writes it and then says how the job ended (:mod:`nemo_runspec.runtime.ended`), which
needs the job's last lines: its outcome line, or its last error. The bytes are
copied unchanged and at once (a ``\\r`` progress line or a prompt without a
newline shows as the job wrote it), each stream to its own. Of each stream about
the last :data:`KEEP_BYTES` of lines are kept, so a flood on one cannot push the
other's last lines out; :attr:`OutputCopy.lines` gives both in the order they were
read (two pipes read by two threads: between the streams that order is close to,
not always exactly, the order the job wrote them in), :attr:`OutputCopy.stderr_lines`
stderr's alone, exactly in order.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections import deque
from typing import IO, Any, TextIO

#: How much of the end of a run's output is kept (as much as is read of a Slurm job's log).
KEEP_BYTES = 256 * 1024
#: Seconds to wait, once the child is gone, for what its pipes still hold.
DRAIN_SECONDS = 5.0


class OutputCopy:
    """Copies a child's stdout and stderr to this process's and keeps their last lines.

    Start the child with :meth:`popen_kwargs`, call :meth:`start` with it, and
    :meth:`wait` once it has ended; :attr:`lines` is then the end of its output.
    """

    def __init__(self, keep: int = KEEP_BYTES) -> None:
        self._keep = keep
        self._lock = threading.Lock()
        self._read = 0  # lines read so far, both streams: the order of the kept lines
        self._kept: dict[int, deque[tuple[int, str]]] = {}
        self._sizes: dict[int, int] = {}
        self._threads: list[threading.Thread] = []
        self._stderr_fd: int | None = None

    @staticmethod
    def popen_kwargs() -> dict[str, Any]:
        """The ``subprocess.Popen`` arguments that give this copy the child's two streams."""
        return {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE}

    def start(self, child: subprocess.Popen[bytes]) -> None:
        """Copy ``child``'s stdout to ours and its stderr to ours, each in a thread."""
        if child.stderr is not None:
            self._stderr_fd = child.stderr.fileno()
        for pipe, target in ((child.stdout, sys.stdout), (child.stderr, sys.stderr)):
            if pipe is None:
                continue
            thread = threading.Thread(target=self._copy, args=(pipe, target), daemon=True,
                                      name="nemotron-output-copy")
            thread.start()
            self._threads.append(thread)

    def wait(self, timeout: float = DRAIN_SECONDS) -> None:
        """Wait until both streams have ended (a process the job left behind may hold them
        open: then up to ``timeout`` seconds, and what came until then is kept)."""
        for thread in self._threads:
            thread.join(timeout)

    @property
    def lines(self) -> list[str]:
        """The last lines of the output kept so far, both streams in the order they were read."""
        with self._lock:
            kept = sorted(item for stream in self._kept.values() for item in stream)
        return [line for _, line in kept]

    @property
    def stderr_lines(self) -> list[str]:
        """The last lines of the child's stderr alone, in order (a traceback is whole here:
        between two pipes, a line of stdout may be read in the middle of one)."""
        with self._lock:
            return [line for _, line in self._kept.get(self._stderr_fd, ())] if self._stderr_fd is not None else []

    def _copy(self, pipe: IO[bytes], target: TextIO) -> None:
        out = getattr(target, "buffer", None)
        fd = pipe.fileno()
        with self._lock:
            self._kept[fd], self._sizes[fd] = deque(), 0
        partial = b""
        while True:
            try:
                data = os.read(fd, 65536)
            except OSError:
                break
            if not data:
                break
            try:
                if out is not None:
                    out.write(data)
                    out.flush()
                else:
                    target.write(data.decode(errors="replace"))
                    target.flush()
            except (OSError, ValueError):  # our stream closed: keep reading, so the job is not blocked
                pass
            *complete, partial = (partial + data).split(b"\n")
            partial = partial[-self._keep:]
            self._add(fd, complete)
        self._add(fd, [partial] if partial else [])
        pipe.close()

    def _add(self, fd: int, raw: list[bytes]) -> None:
        if not raw:
            return
        with self._lock:
            kept = self._kept[fd]
            for item in raw:
                line = item.decode(errors="replace").rstrip("\r")
                kept.append((self._read, line))
                self._read += 1
                self._sizes[fd] += len(line) + 1
            while self._sizes[fd] > self._keep and len(kept) > 1:
                self._sizes[fd] -= len(kept.popleft()[1]) + 1
