"""``--run`` with ``-m``: follow a submitted sweep until every point has ended."""

from __future__ import annotations

import sys
import time


def follow_sweep(sweep_id: str, *, poll: float = 3.0) -> int:
    """Print each point's state as it changes (stderr) until all have ended; return the
    first failing point's exit code, else 0. Ctrl-C stops following (the sweep runs on)."""
    from nemo_runspec.sweep.record import load
    from nemo_runspec.sweep.states import point_states

    seen: dict[int, str] = {}
    try:
        while True:
            rec = load(sweep_id)
            if rec is None:
                return 1
            states = point_states(rec)
            for i, st in sorted(states.items()):
                text = st.state + (f" (exit {st.exit_code})" if st.exit_code else "")
                if seen.get(i) != text:
                    seen[i] = text
                    print(f"[sweep {sweep_id}] point {i}: {text}", file=sys.stderr, flush=True)
            if states and all(st.finished for st in states.values()):
                return next((st.exit_code or 1 for _, st in sorted(states.items()) if st.state != "COMPLETED"), 0)
            time.sleep(poll)
    except KeyboardInterrupt:
        print(f"[sweep {sweep_id}] stopped following; it keeps running: nemotron jobs status {sweep_id}, "
              f"nemotron jobs cancel {sweep_id}", file=sys.stderr)
        return 130
