"""Command line shared by the recipe ``data_prep.py`` scripts.

``python data_prep.py --config CONFIG.yaml [key=value ...]``: the YAML is the recipe
config (its ``run:`` section is ignored; a ``defaults: [name]`` list is merged from
sibling files first); ``key=value`` arguments are overrides such as ``sample=100``
or ``workers=2``, with the CLI's grammar (:mod:`nemo_runspec.config.overrides`).
The result is checked against the stage's schema (:mod:`nemotron.data_prep.schema`)
before any input is read: a bad value is a one-line error naming the file and
line, or the override, that set it.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from nemo_runspec.errors import ConfigError, ExecutionError, NemoRunspecError

KINDS = ("pretrain", "sft", "rl")


def load_config(path: str | Path, overrides: list[str] | None = None) -> Any:
    """The recipe config at ``path`` (its ``defaults:`` chain merged) with ``overrides``.

    The same loader and override grammar as the CLI
    (:func:`nemo_runspec.config.load_config_file`): ``key=value`` sets an existing
    key (a typo is an error), ``+key=value`` adds one. A word that is not an
    override (``--flag``) is an unexpected argument.
    """
    return _load(path, overrides)[0]


def _load(path: str | Path, overrides: list[str] | None) -> tuple[Any, list[Path]]:
    """:func:`load_config` and the YAML files merged into it (parents first)."""
    from nemo_runspec.config import apply_overrides
    from nemo_runspec.config.loader import load_config as load_chain

    overrides = list(overrides or [])
    bad = [o for o in overrides if o.startswith("-") or ("=" not in o and not o.startswith("~"))]
    if bad:
        raise ConfigError(f"unexpected argument {bad[0]!r}", hint="overrides look like key=value, e.g. sample=100")
    p = Path(path).expanduser()
    # as nemo_runspec.config.load_config_file, keeping the list of files for error messages
    cfg, info = load_chain(str(p if p.is_absolute() else Path.cwd() / p), p.parent)
    return apply_overrides(cfg, overrides), list(info.files)


def main(kind: str, argv: list[str] | None = None, *, default_config: str | Path | None = None) -> int:
    """Entry point of a recipe data-prep script; returns the process exit code. The last
    line is the outcome line (:mod:`nemo_runspec.runtime.outcome`)."""
    from nemo_runspec.runtime import outcome

    return outcome.run(f"nano3/data/prep/{kind}", lambda report: _main(report, kind, argv, default_config))


def summary_line(kind: str, summary: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """The outcome's message and figures for a data prep's ``summary``."""
    figures = {k: v for k, v in summary.items() if isinstance(v, int | float | str) and not isinstance(v, bool)}
    records, tokens = summary.get("records"), summary.get("tokens")
    parts = [f"{records:,} records" if isinstance(records, int) else None,
             f"{summary.get('bad_records', 0):,} bad" if isinstance(records, int) else None,
             f"{tokens:,} tokens" if isinstance(tokens, int) and tokens else None]
    what = ", ".join(p for p in parts if p)
    return f"[{kind}] data prep done: {what or 'nothing to do'} -> {summary.get('output_dir', '?')}", figures


def _main(report: Any, kind: str, argv: list[str] | None, default_config: str | Path | None) -> int:
    parser = argparse.ArgumentParser(prog=f"data_prep.py ({kind})", description=__doc__.splitlines()[0])
    parser.add_argument("--config", "-c", default=None, help="recipe config YAML (default: the runspec default)")
    parser.add_argument("overrides", nargs="*", help="key=value overrides, e.g. sample=100 workers=2")
    args = parser.parse_args(argv)
    debug = os.environ.get("NEMOTRON_DEBUG") == "1"
    try:
        cfg_path = args.config or default_config
        if cfg_path is None:
            raise ConfigError("no config given", hint="pass --config path/to/config.yaml")
        cfg, files = _load(cfg_path, args.overrides)
        if kind == "pretrain":
            from .pretrain import run_pretrain as run
        elif kind == "sft":
            from .sft import run_sft as run
        elif kind == "rl":
            from .rl import run_rl as run
        else:
            raise ConfigError(f"unknown data-prep kind {kind!r}", hint=f"one of {', '.join(KINDS)}")
        from .validation import settings_for

        settings_for(cfg, kind, files=files, overrides=args.overrides)  # every key, before any input is read
        summary = run(cfg)
        if isinstance(summary, dict):
            message, figures = summary_line(kind, summary)
            report.summary(message, **figures)
    except NemoRunspecError as exc:
        if debug:
            raise
        report.error(f"error: {exc}")
        return 1 if isinstance(exc, ExecutionError) else 2
    except KeyboardInterrupt:
        report.error("interrupted: finished shards are kept; rerun the same command to resume")
        return 130
    except OSError as exc:  # an output dir we cannot create or write (read-only, full, a file in the way)
        if debug:
            raise
        from nemo_runspec.paths import path_error

        where = exc.filename or "the output directory"
        error = path_error(exc, where, "write data-prep output to")
        report.error(f"error: {error}")
        return 1 if isinstance(error, ExecutionError) else 2  # a full disk is an execution error
    except Exception as exc:  # a bug or a fault nobody foresaw: still one line, the traceback on request
        if debug:
            raise
        text = " ".join(str(exc).split())[:500]
        report.error(f"error: internal error: {type(exc).__name__}: {text} (NEMOTRON_DEBUG=1 shows the traceback)")
        return 1
    return 0
