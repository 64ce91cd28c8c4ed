"""Which stages of a pipeline ``--stages`` names: names and ranges, checked before anything runs."""

from __future__ import annotations

from collections.abc import Sequence

from nemo_runspec.errors import CLIUsageError
from nemo_runspec.pipeline.step import Step


def select_stages(steps: Sequence[Step], names: str | None) -> list[Step]:
    """The steps named in ``names`` (``"pretrain,sft"`` or ``"prep-sft:rl"`` for a range), in pipeline order."""
    from nemo_runspec._suggest import did_you_mean

    if not names:
        return list(steps)
    order = [s.name for s in steps]

    def index(name: str) -> int:
        if name not in order:
            raise CLIUsageError(f"no stage {name!r} in this pipeline",
                                hint=did_you_mean(name, order) or f"stages: {', '.join(order)}")
        return order.index(name)

    chosen: set[str] = set()
    for part in (p.strip() for p in names.split(",") if p.strip()):
        if ":" in part:
            first, _, last = part.partition(":")
            lo, hi = index(first) if first else 0, index(last) if last else len(order) - 1
            if lo > hi:
                raise CLIUsageError(f"stage range {part!r} is reversed: {first} runs after {last}",
                                    hint=f"write {last}:{first}; stages in order: {', '.join(order)}")
            chosen |= set(order[lo: hi + 1])
        else:
            chosen.add(order[index(part)])
    if not chosen:
        raise CLIUsageError(f"--stages {names!r} names no stage", hint=f"stages: {', '.join(order)}")
    return [s for s in steps if s.name in chosen]
