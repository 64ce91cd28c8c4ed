"""Small, documented adjustments to nemo-run 0.11.1 used by :mod:`nemo_runspec.slurm`.

Everything here imports ``nemo_run`` lazily (inside functions).

- :func:`experiment_class` returns an ``Experiment`` subclass whose experiment
  directory may already exist. We create the task directory ourselves before
  submission to place the 0600 secrets file in it; stock nemo-run's ``run()``
  calls ``os.makedirs(exp_dir, exist_ok=False)`` and would fail.
- :func:`quiet_nemo_run` stops invoke from reading stdin and silences nemo-run's global rich console and loggers
  (it prints from the submitting thread and from background threads), so the
  CLI alone decides what the user sees.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from typing import Any

_EXPERIMENT_CLS: Any = None


def experiment_class() -> Any:
    """``nemo_run.Experiment`` subclass that tolerates a pre-created experiment dir."""
    global _EXPERIMENT_CLS
    if _EXPERIMENT_CLS is None:
        import nemo_run as run

        class NemotronExperiment(run.Experiment):  # type: ignore[misc, valid-type]
            """Experiment whose directory may already hold our secrets file."""

            def _save_experiment(self, exist_ok: bool = False) -> None:
                super()._save_experiment(exist_ok=True)

        # nemo-run serialises the experiment with a reference to its class: make
        # it importable as nemo_runspec.run.NemotronExperiment (see __getattr__).
        NemotronExperiment.__qualname__ = "NemotronExperiment"
        NemotronExperiment.__module__ = __name__
        _EXPERIMENT_CLS = NemotronExperiment
    return _EXPERIMENT_CLS


def __getattr__(name: str) -> Any:
    if name == "NemotronExperiment":
        return experiment_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@contextlib.contextmanager
def quiet_nemo_run() -> Iterator[None]:
    """Mute nemo-run's console and loggers for the duration of the block."""
    import invoke.config
    from nemo_run.core.frontend.console.api import CONSOLE

    # nemo-run runs local commands through invoke ``Context()``s that read our
    # stdin in a background thread (eating keystrokes, failing under pytest).
    orig_defaults = invoke.config.Config.__dict__["global_defaults"]

    def global_defaults() -> dict[str, Any]:
        data = orig_defaults.__func__()
        data["run"]["in_stream"] = False
        return data

    invoke.config.Config.global_defaults = staticmethod(global_defaults)

    old_quiet = CONSOLE.quiet
    loggers = [logging.getLogger(n) for n in ("nemo_run", "torchx", "paramiko", "fabric", "invoke")]
    old_levels = [lg.level for lg in loggers]
    CONSOLE.quiet = True
    for lg in loggers:
        lg.setLevel(logging.ERROR)
    try:
        yield
    finally:
        invoke.config.Config.global_defaults = orig_defaults
        CONSOLE.quiet = old_quiet
        for lg, lvl in zip(loggers, old_levels, strict=True):
            lg.setLevel(lvl)
