"""Training log lines -> metric points and timeline events.

Two formats are read, whichever a line is in:

- the CPU fallback trainer's (``nemotron.training.loop``; docs/training.md)::

      [pretrain] step 10/30 | loss 7.2544 | lr 2.68e-03 | 839 tok/s
      [pretrain] eval loss 7.4231 at step 10
      [pretrain] saved checkpoint /.../checkpoints/step_00000010.pt
      [pretrain] resumed from /.../step_00000010.pt at step 10
      [pretrain] stopped after step 14 to be requeued (checkpoint saved)
      [pretrain] final eval loss 7.0089
      published nano3-pretrain-model-tiny:v1 (latest) -> /path  [registry: ...]

- Megatron-Bridge's (pinned 0.3.1: ``training/utils/train_utils.py``, ``eval.py``,
  ``checkpointing.py``), whose lines carry their own time::

      [2025-06-01 10:00:00] iteration       10/     100 | consumed samples: ... |
          elapsed time per iteration (ms): 812.3 | ... | global batch size:     8 | lm loss: 1.023E+01 | ...
       validation loss at iteration 10 | lm loss value: 1.0E+01 | lm loss PPL: ...
        successfully saved checkpoint from iteration      10 to /ckpt [ t 1/1, p 1/1 ]

  Throughput is ``global batch size * seq_length / elapsed`` when the job's
  ``seq_length`` is known.

torchrun's ``--tee`` prefix (``[default0]:``) is taken off first. Anything else
is ignored, so a log may hold any other output.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable
from dataclasses import dataclass, field

from nemo_runspec.report.model import (
    EVAL_LOSS,
    LEARNING_RATE,
    TOKENS_PER_SEC,
    TRAIN_LOSS,
    ArtifactLink,
    Event,
)

_TEE = re.compile(r"^\[default\d+\]:")
_TASK = r"\[(?P<task>[\w.-]+)\] "
_NUM = r"[-+]?(?:\d[\d,]*\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|nan|inf"
_STEP = re.compile(_TASK + rf"step (?P<step>\d+)/(?P<total>\d+) \| loss (?P<loss>{_NUM}) \| lr (?P<lr>{_NUM})"
                   rf" \| (?P<tps>{_NUM}) tok/s")
_EVAL = re.compile(_TASK + rf"eval loss (?P<loss>{_NUM}) at step (?P<step>\d+)")
_FINAL_EVAL = re.compile(_TASK + rf"final eval loss (?P<loss>{_NUM})")
_SAVED = re.compile(_TASK + r"saved checkpoint (?P<path>\S+)")
_CKPT_STEP = re.compile(r"step_0*(\d+)")
_RESUMED = re.compile(_TASK + r"resumed from (?P<path>\S+) at step (?P<step>\d+)")
_STOPPED = re.compile(_TASK + r"stopped after step (?P<step>\d+) to be requeued")
_FINAL = re.compile(_TASK + r"final loss \S+ \| steps (?P<steps>\d+) \|")
_PUBLISHED = re.compile(r"^published (?P<ref>\S+) \(latest\) -> (?P<path>\S+)")
_MEG_ITER = re.compile(r"^\s*\[(?P<ts>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)\] iteration\s+(?P<step>\d+)/\s*(?P<total>\d+) \|"
                       r"(?P<rest>.*)$")
_MEG_VAL = re.compile(rf"validation loss at iteration\s+(?P<step>\d+) \| lm loss value: (?P<loss>{_NUM})")
_MEG_SAVED = re.compile(r"successfully saved checkpoint from iteration\s+(?P<step>\d+) to (?P<path>\S+)")

#: ISSUE 34 (engineer i34-outcome) adds one machine-readable outcome line at the end of
#: every job's log; its format is not fixed yet. :func:`outcome_of` is the one place that
#: reads it: set this prefix (and the parsing below it) when that line exists.
OUTCOME_PREFIX: str | None = None


def outcome_of(lines: list[str]) -> str:
    """The job's own last word on how it ended: its outcome line (issue 34, see
    :data:`OUTCOME_PREFIX`), else its last ``error: ...`` line, else ``""``."""
    for line in reversed(lines):
        if OUTCOME_PREFIX and line.startswith(OUTCOME_PREFIX):
            return line[len(OUTCOME_PREFIX):].strip()
    for line in reversed(lines):
        if line.startswith("error: "):
            return line
    return ""


def _num(text: str) -> float:
    return float(text.replace(",", ""))


@dataclass
class LogFacts:
    """What the lines said: ``points`` (metric, attempt, step, value, time), timeline
    ``events``, what was ``published``, the ``outcome`` and the step count asked for."""

    points: list[tuple[str, int, int, float, float | None]] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)
    published: list[ArtifactLink] = field(default_factory=list)
    outcome: str = ""
    total_steps: int | None = None


class LineParser:
    """Feed it lines (:meth:`feed`); read :attr:`facts`.

    ``seq_length`` (tokens per sample) turns Megatron's iteration time into tokens/s.
    """

    def __init__(self, *, seq_length: int | None = None) -> None:
        self.facts = LogFacts()
        self.seq_length = seq_length
        self._last_step: dict[int, int] = {}
        self._tail: list[str] = []

    def _point(self, metric: str, attempt: int, step: int, value: float, t: float | None) -> None:
        self.facts.points.append((metric, attempt, step, value, t))
        self._last_step[attempt] = max(step, self._last_step.get(attempt, 0))

    def feed(self, raw: str, attempt: int = 0, t: float | None = None) -> None:
        """Read one line of attempt ``attempt`` (``t``: when it was written, if known)."""
        line = _TEE.sub("", raw.rstrip("\n")).rstrip()
        if not line:
            return
        self._tail = (self._tail + [line.strip()])[-200:]
        if self._fallback(line, attempt, t):
            return
        self._megatron(line, attempt, t)

    def _fallback(self, line: str, attempt: int, t: float | None) -> bool:
        m = _STEP.match(line)
        if m:
            step = int(m["step"])
            self.facts.total_steps = int(m["total"])
            self._point(TRAIN_LOSS, attempt, step, _num(m["loss"]), t)
            self._point(LEARNING_RATE, attempt, step, _num(m["lr"]), t)
            self._point(TOKENS_PER_SEC, attempt, step, _num(m["tps"]), t)
            return True
        m = _EVAL.match(line)
        if m:
            self._point(EVAL_LOSS, attempt, int(m["step"]), _num(m["loss"]), t)
            return True
        m = _FINAL_EVAL.match(line)
        if m:
            step = self.facts.total_steps or self._last_step.get(attempt, 0)
            self._point(EVAL_LOSS, attempt, step, _num(m["loss"]), t)
            return True
        m = _SAVED.match(line)
        if m:
            found = _CKPT_STEP.search(m["path"].rsplit("/", 1)[-1])
            step = int(found.group(1)) if found else self._last_step.get(attempt)
            self.facts.events.append(Event("checkpoint", t, attempt, step, m["path"]))
            return True
        m = _RESUMED.match(line)
        if m:
            self.facts.events.append(Event("resumed", t, attempt, int(m["step"]), m["path"]))
            return True
        m = _STOPPED.match(line)
        if m:
            self.facts.events.append(Event("stopped", t, attempt, int(m["step"]), "checkpointed, to be requeued"))
            return True
        m = _FINAL.match(line)
        if m:
            self.facts.total_steps = int(m["steps"])
            return True
        m = _PUBLISHED.match(line)
        if m:
            self.facts.published.append(ArtifactLink(ref=m["ref"], path=m["path"]))
            self.facts.events.append(Event("published", t, attempt, self._last_step.get(attempt), m["ref"]))
            return True
        return False

    def _megatron(self, line: str, attempt: int, t: float | None) -> None:
        m = _MEG_ITER.match(line)
        if m:
            when = t if t is not None else _local_time(m["ts"])
            step = int(m["step"])
            self.facts.total_steps = int(m["total"])
            fields = dict(_fields(m["rest"]))
            if "lm loss" in fields:
                self._point(TRAIN_LOSS, attempt, step, _num(fields["lm loss"]), when)
            if "learning rate" in fields:
                self._point(LEARNING_RATE, attempt, step, _num(fields["learning rate"]), when)
            elapsed, batch = fields.get("elapsed time per iteration (ms)"), fields.get("global batch size")
            if elapsed and batch and self.seq_length and _num(elapsed) > 0:
                tps = _num(batch) * self.seq_length / (_num(elapsed) / 1000.0)
                self._point(TOKENS_PER_SEC, attempt, step, tps, when)
            return
        m = _MEG_VAL.search(line)
        if m:
            self._point(EVAL_LOSS, attempt, int(m["step"]), _num(m["loss"]), t)
            return
        m = _MEG_SAVED.search(line)
        if m:
            self.facts.events.append(Event("checkpoint", t, attempt, int(m["step"]), m["path"]))

    def finish(self) -> LogFacts:
        """The facts, with the outcome read from the last lines."""
        self.facts.outcome = outcome_of(self._tail)
        return self.facts


def _fields(rest: str) -> Iterable[tuple[str, str]]:
    for part in rest.split("|"):
        key, sep, value = part.partition(":")
        if sep and value.strip():
            yield key.strip(), value.strip()


def _local_time(stamp: str) -> float | None:
    try:
        return time.mktime(time.strptime(stamp, "%Y-%m-%d %H:%M:%S"))
    except ValueError:
        return None


def parse_lines(lines: Iterable[str], attempt: int = 0, *, seq_length: int | None = None) -> LogFacts:
    """:class:`LineParser` over ``lines`` of one attempt."""
    parser = LineParser(seq_length=seq_length)
    for line in lines:
        parser.feed(line, attempt)
    return parser.finish()
