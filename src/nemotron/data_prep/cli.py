"""Command line shared by the recipe ``data_prep.py`` scripts.

``python data_prep.py --config CONFIG.yaml [key=value ...]``: the YAML is the recipe
config (its ``run:`` section is ignored; a ``defaults: [name]`` list is merged from
sibling files first); ``key=value`` arguments are OmegaConf dotlist overrides such
as ``sample=100`` or ``workers=2``.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from nemo_runspec.errors import ConfigError, ExecutionError, NemoRunspecError

KINDS = ("pretrain", "sft", "rl")


def load_config(path: str | Path, overrides: list[str] | None = None, _seen: tuple[str, ...] = ()) -> Any:
    """Load a YAML config, merging its ``defaults:`` chain and then ``overrides``."""
    from omegaconf import OmegaConf
    from omegaconf.errors import OmegaConfBaseException

    p = Path(path).expanduser().resolve()
    if not p.is_file():
        raise ConfigError(f"config file {path} not found")
    if str(p) in _seen:
        raise ConfigError(f"config defaults cycle: {' -> '.join((*_seen, str(p)))}", path=str(p))
    try:
        cfg = OmegaConf.load(p)
    except (OmegaConfBaseException, ValueError) as exc:
        raise ConfigError(f"cannot parse config: {exc}", path=str(p)) from None
    defaults = cfg.pop("defaults", None) if "defaults" in cfg else None
    if defaults:
        merged = OmegaConf.create()
        for name in defaults:
            name = str(name)
            target = p.parent / (name if name.endswith((".yaml", ".yml")) else f"{name}.yaml")
            merged = OmegaConf.merge(merged, load_config(target, None, (*_seen, str(p))))
        cfg = OmegaConf.merge(merged, cfg)
    if overrides:
        bad = [o for o in overrides if "=" not in o or o.startswith("-")]
        if bad:
            raise ConfigError(f"unexpected argument {bad[0]!r}", hint="overrides look like key=value, e.g. sample=100")
        try:
            cfg = OmegaConf.merge(cfg, OmegaConf.from_dotlist([o.removeprefix("+") for o in overrides]))
        except OmegaConfBaseException as exc:
            raise ConfigError(f"bad override: {exc}") from None
    return cfg


def main(kind: str, argv: list[str] | None = None, *, default_config: str | Path | None = None) -> int:
    """Entry point of a recipe data-prep script; returns the process exit code."""
    parser = argparse.ArgumentParser(prog=f"data_prep.py ({kind})", description=__doc__.splitlines()[0])
    parser.add_argument("--config", "-c", default=None, help="recipe config YAML (default: the runspec default)")
    parser.add_argument("overrides", nargs="*", help="key=value overrides, e.g. sample=100 workers=2")
    args = parser.parse_args(argv)
    debug = os.environ.get("NEMOTRON_DEBUG") == "1"
    try:
        cfg_path = args.config or default_config
        if cfg_path is None:
            raise ConfigError("no config given", hint="pass --config path/to/config.yaml")
        cfg = load_config(cfg_path, args.overrides)
        if kind == "pretrain":
            from .pretrain import run_pretrain as run
        elif kind == "sft":
            from .sft import run_sft as run
        elif kind == "rl":
            from .rl import run_rl as run
        else:
            raise ConfigError(f"unknown data-prep kind {kind!r}", hint=f"one of {', '.join(KINDS)}")
        run(cfg)
    except NemoRunspecError as exc:
        if debug:
            raise
        print(f"error: {exc}", file=sys.stderr)
        return 1 if isinstance(exc, ExecutionError) else 2
    except KeyboardInterrupt:
        print("interrupted: finished shards are kept; rerun the same command to resume", file=sys.stderr)
        return 130
    return 0
