"""Which lines of a job's log are the launchers' noise, and which is the job's own last error.

A job's log mixes what the job printed with what the tools around it print:
the batch script's shell tracing (nemo-run's template runs under ``set -evx``),
torchrun's report of a failed worker (its own traceback ending in
``ChildFailedError``, the ``====`` banner with "Root Cause"), and
torch.distributed's warnings when a peer or the rendezvous store goes away
(``[c10d] recvValue... failed``, followed by C++ stack frames ``frame #0: ...``),
which torchrun's agents print even after a successful run when the agent that
hosts the rendezvous store exits before the others have closed the rendezvous.

:func:`fold` keeps the job's own lines and counts the rest by kind, for the
end-of-job summary (:mod:`nemo_runspec.slurm.ending`); the log file itself is
never changed. :func:`last_error` finds the job's own last error line when it
wrote no outcome line (:mod:`nemo_runspec.runtime.outcome`). :class:`StreamFilter`
folds the C++ stack frames (and, once the job said it succeeded, the teardown
warnings) out of a log streamed to the terminal.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

SHELL = "shell tracing"
TORCHRUN = "torchrun's failure report"
TEARDOWN = "torch.distributed connection messages"

#: torchrun's tee (``[default0]:``), torch's excepthook (``[rank0]: ``), ``srun --label`` (``0: ``)
_PREFIX = re.compile(r"^(?:\[rank\d+\]: ?|\[[A-Za-z_]*\d+\]:|\d+: )+")
#: bash's xtrace (``+ cmd``, ``++ cmd`` in a substitution)
_XTRACE = re.compile(r"^\++ ")
#: nemo-run's template reports the step's code in the batch log; the summary says it anyway
_TEMPLATE_ECHO = re.compile(r"^job exited with code \d+$")
#: torch's Python logging (glog style) from torchrun's own modules
_ELASTIC_LOG = re.compile(r"^[IWE]\d{4} [\d:.]+ \d+ torch/distributed/(?:elastic/|run\.py|launcher/)\S*\] ")
#: C++ warnings of c10d (TCPStore, sockets, process groups): ``[W1128 04:50:40.89 TCPStore.cpp:115] [c10d] ...``
_C10D_LOG = re.compile(r"^\[[IWE]\d{4} [\d:.]+ (?:\d+ )?\S+:\d+\] \[c10d\]")
_FRAME = re.compile(r"^(?:frame #\d+: |Exception raised from \S.* \(most recent call first\):$|<omitting python frames>$)")
_BANNER = re.compile(r"^(?:={20,}|\*{20,})$")
_TRACEBACK = "Traceback (most recent call last):"
_OWN_ERROR = re.compile(r"^(?:error|ERROR|fatal|FATAL)(?:: |:$)")
#: what Slurm's tools and pyxis/enroot say of a failure: ``srun: error: n2: task 1: Exited ...``,
#: ``slurmstepd-n1: error: *** JOB 12 ON n1 CANCELLED AT ... ***``, ``pyxis: ... error``
_SLURM_ERROR = re.compile(r"^(?:slurmstepd(?:-\S+)?|srun|sbatch|pyxis|enroot)(?:: \S+)*: (?:error|ERROR)\b")


def strip_prefix(line: str) -> str:
    """``line`` without the launchers' rank prefixes (``[default0]:``, ``[rank1]:``, ``0: ``)."""
    return _PREFIX.sub("", line, count=1)


def classify(lines: Sequence[str], *, script_lines: Iterable[str] = ()) -> list[str | None]:
    """For each line, the kind of noise it is (:data:`SHELL`, :data:`TORCHRUN`,
    :data:`TEARDOWN`) or None for the job's own output. ``script_lines`` are the
    batch script's lines, whose echo by ``set -v`` is shell tracing too."""
    script = {s.rstrip() for s in script_lines if s.strip()}
    bare = [strip_prefix(line.rstrip("\r\n")) for line in lines]
    kinds: list[str | None] = [None] * len(bare)
    banner = ""  # inside one of torchrun's banners: the character of its closing rule
    i = 0
    while i < len(bare):
        text = bare[i]
        if banner:
            kinds[i] = TORCHRUN
            if _BANNER.match(text) and text[0] == banner:
                banner = ""
        elif text == _TRACEBACK and _ends_in_child_failed(bare, i):
            end = _traceback_end(bare, i)
            assert end is not None
            kinds[i:end + 1] = [TORCHRUN] * (end + 1 - i)
            i = end
            if end + 1 < len(bare) and _BANNER.match(bare[end + 1]):  # the report that follows
                kinds[end + 1], banner, i = TORCHRUN, bare[end + 1][0], end + 1
        elif _XTRACE.match(text) or _TEMPLATE_ECHO.match(text) or (script and text.rstrip() in script):
            kinds[i] = SHELL
        elif _ELASTIC_LOG.match(text):
            kinds[i] = TORCHRUN
        elif _C10D_LOG.match(text) or _FRAME.match(text):
            kinds[i] = TEARDOWN
        elif not text.strip() and i > 0 and kinds[i - 1] == TEARDOWN:
            kinds[i] = TEARDOWN  # the blank line that ends a block of frames
        elif _BANNER.match(text) and text[0] == "*" and i + 1 < len(bare) \
                and bare[i + 1].startswith("Setting OMP_NUM_THREADS"):
            kinds[i], banner = TORCHRUN, "*"  # torchrun's start-up banner
        i += 1
    return kinds


def _ends_in_child_failed(lines: Sequence[str], start: int) -> bool:
    end = _traceback_end(lines, start)
    return end is not None and "ChildFailedError" in lines[end]


def _traceback_end(lines: Sequence[str], start: int) -> int | None:
    """Index of the exception line that ends the traceback starting at ``start``."""
    for j in range(start + 1, len(lines)):
        text = lines[j]
        if text.startswith((" ", "\t")) or not text.strip():
            continue
        return j
    return None


@dataclass
class Folded:
    """A log's lines with the noise taken out: ``kept`` (prefixes kept as written)
    and how many lines of each kind were folded."""

    kept: list[str] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)

    def describe(self) -> str:
        """``12 lines of shell tracing, 31 lines of torch.distributed connection messages``."""
        return ", ".join(f"{n} line{'s' if n != 1 else ''} of {kind}" for kind, n in self.counts.items())


def fold(lines: Sequence[str], *, script_lines: Iterable[str] = ()) -> Folded:
    """Split ``lines`` into the job's own and the counted noise (:func:`classify`)."""
    out = Folded()
    for line, kind in zip(lines, classify(lines, script_lines=script_lines), strict=True):
        if kind is None:
            out.kept.append(line.rstrip("\r\n"))
        else:
            out.counts[kind] = out.counts.get(kind, 0) + 1
    return out


def last_error(lines: Sequence[str]) -> str | None:
    """The job's own last error line in ``lines`` (noise already folded or not): the
    exception line of its last Python traceback or its last ``error: ...`` line,
    whichever comes later; else the last error line of Slurm's tools (``srun: error:``,
    ``slurmstepd: error: *** JOB ... CANCELLED ...``); None when there is none."""
    kinds = classify(lines)
    bare = [strip_prefix(line.rstrip("\r\n")) for line in lines]
    own: str | None = None
    slurm: str | None = None
    i = 0
    while i < len(bare):
        text = bare[i]
        if kinds[i] is not None:
            i += 1
            continue
        if text == _TRACEBACK:
            end = _traceback_end(bare, i)
            if end is not None:
                own = bare[end].strip()
                i = end + 1
                continue
        elif _OWN_ERROR.match(text):
            own = text.strip()
        elif _SLURM_ERROR.match(text):
            slurm = text.strip()
        i += 1
    return own or slurm


def last_said(lines: Sequence[str]) -> str | None:
    """The last line the job itself printed in ``lines`` (not blank, not noise, not an
    outcome line), without its rank prefix; None when there is none."""
    from nemo_runspec.runtime.outcome import MARKER

    for line, kind in zip(reversed(lines), reversed(classify(lines)), strict=True):
        text = strip_prefix(line.rstrip("\r\n")).strip()
        if kind is None and text and not text.startswith(MARKER):
            return text
    return None


class StreamFilter:
    """Fold noise out of a log as it is streamed: C++ stack frames always (one note line
    per block says how many), and torch.distributed's teardown warnings and torchrun's
    log lines once the job has written a successful outcome line. Lines are passed on
    whole (a partial line waits for its end or :meth:`close`)."""

    def __init__(self, *, note: str = "") -> None:
        import codecs

        from nemo_runspec.runtime.outcome import parse_line

        self._parse = parse_line
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._pending = ""
        self._folded = 0
        self._after_success = False
        self.note = note
        self.total = 0

    def feed(self, chunk: bytes | str) -> str:
        """What to print of ``chunk`` (appended to what came before; bytes are UTF-8, a
        character cut between two chunks is decoded whole)."""
        text = self._decoder.decode(chunk) if isinstance(chunk, bytes) else chunk
        data = self._pending + text
        lines = data.split("\n")
        self._pending = lines.pop()
        return "".join(self._line(line + "\n") for line in lines)

    def close(self) -> str:
        """The rest: a partial last line, and the note of a block still open."""
        rest, self._pending = self._pending + self._decoder.decode(b"", final=True), ""
        out = self._line(rest) if rest else ""
        return out + self._flush_note()

    def _line(self, line: str) -> str:
        text = strip_prefix(line.rstrip("\r\n"))
        outcome = self._parse(line)
        if outcome is not None and outcome.ok:
            self._after_success = True
        fold = bool(_FRAME.match(text)) or (self._folded > 0 and not text.strip())
        if self._after_success and (_C10D_LOG.match(text) or _ELASTIC_LOG.match(text)):
            fold = True
        if fold:
            self._folded += 1
            self.total += 1
            return ""
        return self._flush_note() + line

    def _flush_note(self) -> str:
        if not self._folded:
            return ""
        n, self._folded = self._folded, 0
        return f"[nemotron: {n} line{'s' if n != 1 else ''} of {TEARDOWN} folded{self.note}]\n"
