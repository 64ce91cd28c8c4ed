"""Load recipe YAML configs: name/path resolution, ``defaults:`` inheritance, overrides.

Rules (see :func:`parse_config`):

- A config is a *name* (``tiny`` -> ``<config_dir>/tiny.yaml`` or ``.yml``) or a
  *path* (anything containing a path separator or ending in ``.yaml``/``.yml``,
  relative to the current directory).
- ``defaults: base`` or ``defaults: [base, extra]`` merges the parents first, in
  list order, then the file itself on top (``_self_`` in the list places the file
  elsewhere, as in Hydra). Each entry (a name or a relative path) is looked up
  first relative to the directory of the file that names it, then in the
  recipe's config directory (so ``-c /elsewhere/mine.yaml`` with
  ``defaults: [default]`` inherits the recipe's ``default.yaml`` unless a
  ``default.yaml`` sits next to ``mine.yaml``). Absolute paths are used as they
  are. The ``defaults`` key is removed from the result. Cycles are errors
  naming the chain.
- Interpolations (``${...}``, including ``${art:...}``) are never resolved here:
  they may only be resolvable on the cluster.
"""

from __future__ import annotations

import os
import re
import weakref
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from omegaconf import DictConfig, OmegaConf

from nemo_runspec._suggest import did_you_mean
from nemo_runspec.config.yaml_io import read_yaml
from nemo_runspec.errors import ConfigError

# The reference documents the whole pipeline in ``config/loader``
# (``from nemo_runspec.config.loader import build_job_config, save_configs``);
# they live in job_config.py and jobdir.py and are re-exported here.
# Resolved on first use (module __getattr__): job_config imports this module, so a
# plain import here would be a cycle.
_REEXPORTS = {
    "build_job_config": "nemo_runspec.config.job_config",
    "extract_train_config": "nemo_runspec.config.job_config",
    "generate_job_dir": "nemo_runspec.config.jobdir",
    "save_configs": "nemo_runspec.config.jobdir",
}


def __getattr__(name: str) -> Any:
    module = _REEXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)


YAML_SUFFIXES = (".yaml", ".yml")
_SELF = "_self_"
_DEFAULTS_LINE = re.compile(r"^defaults\s*:")


@dataclass
class LoadedConfig:
    """Where a config came from; attached to the result of :func:`parse_config`.

    ``files`` lists every YAML file merged, in merge order (parents first).
    ``env_files`` maps each ``run.env`` key to the last file that set it.
    """

    name: str
    path: Path
    files: list[Path] = field(default_factory=list)
    env_files: dict[str, Path] = field(default_factory=dict)


_INFO: dict[int, LoadedConfig] = {}


def _remember(cfg: DictConfig, info: LoadedConfig) -> None:
    key = id(cfg)
    _INFO[key] = info
    weakref.finalize(cfg, _INFO.pop, key, None)


def config_info(cfg: DictConfig) -> LoadedConfig | None:
    """Where ``cfg`` was loaded from, if it is the object :func:`parse_config` returned."""
    return _INFO.get(id(cfg))


def list_configs(config_dir: str | os.PathLike[str]) -> list[str]:
    """Names of the configs in ``config_dir`` (YAML file stems), sorted."""
    d = Path(config_dir)
    try:
        return sorted({p.stem for p in d.iterdir() if p.suffix in YAML_SUFFIXES and p.is_file()})
    except OSError:  # missing, not a directory, not readable
        return []


def is_config_path(config: str) -> bool:
    """True when ``config`` is a path rather than a config name."""
    return "/" in config or os.sep in config or config.endswith(YAML_SUFFIXES)


def resolve_config_path(
    config: str, config_dir: str | os.PathLike[str], *, base_dir: str | os.PathLike[str] | None = None
) -> Path:
    """Turn a config name or path into an existing file path.

    Names are looked up in ``config_dir``; relative paths are relative to
    ``base_dir`` (default: the current directory). Raises :class:`ConfigError`
    with the available configs and a did-you-mean hint when nothing matches.
    """
    if not config or not config.strip():
        raise ConfigError("empty config name", path=config_dir)
    if is_config_path(config):
        p = Path(config).expanduser()
        if not p.is_absolute():
            p = Path(base_dir if base_dir is not None else Path.cwd()) / p
        if _is_file(p):
            return p
        if _exists(p):
            raise _not_a_config_file(p)
        hint = None
        if _is_dir(p.parent):
            hint = did_you_mean(p.name, _yaml_names(p.parent))
        raise ConfigError(f"config file not found: {config}", path=p, hint=hint)
    d = Path(config_dir)
    for suffix in YAML_SUFFIXES:
        candidate = d / f"{config}{suffix}"
        if _is_file(candidate):
            return candidate
    if not _is_dir(d):
        raise ConfigError(f"unknown config '{config}': config directory does not exist", path=d)
    available = list_configs(d)
    hint = did_you_mean(config, available, listing=True) or "the directory has no .yaml configs"
    here = Path(base_dir if base_dir is not None else Path.cwd()) / config
    if _is_dir(here):  # `-c mydir`: the user means that directory, not a config name
        exc = _not_a_config_file(here)
        raise ConfigError(exc.problem, path=here, hint=f"{exc.hint}; or a config name: {', '.join(available)}")
    if _exists(here):  # `-c myconf`: a file path written without '/' or .yaml
        hint = f"{here} is a file: to use it, pass it as ./{config}; {hint}"
    raise ConfigError(f"unknown config '{config}'", path=d, hint=hint)


def _exists(p: Path) -> bool:
    try:
        p.stat()
    except (OSError, ValueError):
        return False
    return True


def _is_file(p: Path) -> bool:
    try:
        return p.is_file()
    except (OSError, ValueError):  # e.g. a parent dir without search permission
        return False


def _is_dir(p: Path) -> bool:
    try:
        return p.is_dir()
    except (OSError, ValueError):
        return False


def _yaml_names(d: Path) -> list[str]:
    try:
        return sorted(c.name for c in d.iterdir() if c.suffix in YAML_SUFFIXES)
    except OSError:
        return []


def _not_a_config_file(p: Path) -> ConfigError:
    """A config path that exists but is not a regular file (a directory, a device)."""
    if _is_dir(p):
        names = _yaml_names(p)
        shown = ", ".join(str(p / n) for n in names[:3]) + (", ..." if len(names) > 3 else "")
        hint = f"pass one of its files: {shown}" if names else "it holds no .yaml files; pass a YAML file"
        return ConfigError("is a directory, not a YAML config file", path=p, hint=hint)
    from nemo_runspec.files import kind_of

    try:
        kind = kind_of(os.stat(p).st_mode) or "not a regular file"
    except OSError as exc:
        kind = f"unreadable ({exc.strerror or exc})"
    return ConfigError(f"is {kind}, not a regular file (a config must be a YAML file)", path=p)


def _defaults_line(text: str) -> int | None:
    for i, line in enumerate(text.splitlines(), start=1):
        if _DEFAULTS_LINE.match(line):
            return i
    return None


def _parse_defaults(value: object, path: Path, line: int | None) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return list(value)
    raise ConfigError(
        "'defaults' must be a config name or a list of config names",
        path=path,
        line=line,
        hint="e.g. 'defaults: [base]'",
    )


def _create(data: dict[str, Any], path: Path) -> DictConfig:
    try:
        return OmegaConf.create(data)
    except Exception as exc:  # omegaconf raises several unrelated types here
        raise ConfigError(f"invalid config: {exc}".split("\n")[0], path=path) from exc


def _merge(base: DictConfig, top: DictConfig, path: Path) -> DictConfig:
    try:
        merged = OmegaConf.merge(base, top)
    except Exception as exc:
        raise ConfigError(f"cannot merge config: {exc}".split("\n")[0], path=path) from exc
    assert isinstance(merged, DictConfig)
    return merged


def _resolve_default(entry: str, including: Path, config_dir: Path | None) -> Path:
    """Find a ``defaults`` entry: next to ``including`` first, then in ``config_dir``."""
    dirs = [including.parent]
    if config_dir is not None and Path(config_dir).resolve() != including.parent.resolve():
        dirs.append(Path(config_dir))
    first: ConfigError | None = None
    for d in dirs:
        try:
            return resolve_config_path(entry, d, base_dir=d)
        except ConfigError as exc:
            first = first or exc
    assert first is not None
    where = " or ".join(str(d) for d in dirs)
    hint = first.hint
    if not is_config_path(entry):
        names = sorted({n for d in dirs for n in list_configs(d)})
        hint = did_you_mean(entry, names, listing=True) if names else "no .yaml configs there"
    raise ConfigError(f"unknown config '{entry}' in defaults (looked in {where})", hint=hint)


def _leaf_paths(data: object, prefix: str = "") -> list[str]:
    if not isinstance(data, dict) or not data:
        return [prefix] if prefix else []
    out: list[str] = []
    for k, v in data.items():
        out += _leaf_paths(v, f"{prefix}.{k}" if prefix else str(k))
    return out


def _warn_new_keys(parents: DictConfig, data: dict, path: Path, text: str) -> None:
    """Warn (not fail: configs may add keys) about a child's keys that look like typos.

    A key is flagged when its parents lack it but have a close sibling
    (``train.trian_iters`` next to ``train.train_iters``): overrides would refuse
    it, and a YAML file should not silently train with the default instead.
    """
    import sys

    from nemo_runspec._suggest import closest

    base = OmegaConf.to_container(parents, resolve=False)
    for dotted in _leaf_paths(data):
        node: object = base
        parts = dotted.split(".")
        for i, part in enumerate(parts):
            if not isinstance(node, dict):
                break
            if part not in node:
                near = closest(part, [str(k) for k in node])
                if near is not None:
                    where = ".".join(parts[:i])
                    suggestion = f"{where}.{near}" if where else near
                    line = next((n for n, ln in enumerate(text.splitlines(), 1)
                                 if ln.strip().startswith(f"{part}:")), None)
                    loc = f"{path}:{line}" if line else str(path)
                    print(f"warning: {loc}: key '{'.'.join(parts[:i + 1])}' is not in the configs "
                          f"it extends (did you mean '{suggestion}'?)", file=sys.stderr)
                break
            node = node[part]


def _load_chain(
    path: Path, stack: list[Path], info: LoadedConfig, config_dir: Path | None = None
) -> DictConfig:
    real = path.resolve()
    data, text = read_yaml(path)
    line = _defaults_line(text)
    entries = _parse_defaults(data.pop("defaults", None), path, line)
    own = _create(data, path)
    layers = entries if _SELF in entries else [*entries, _SELF]
    result = OmegaConf.create({})
    for entry in layers:
        if entry == _SELF:
            if entries:  # a child of other configs: flag keys its parents do not have
                _warn_new_keys(result, data, path, text)
            result = _merge(result, own, path)
            info.files.append(path)
            env = (data.get("run") or {}).get("env") if isinstance(data.get("run"), dict) else None
            if isinstance(env, dict):
                info.env_files.update({str(k): path for k in env})
            continue
        try:
            parent = _resolve_default(entry, path, config_dir)
        except ConfigError as exc:
            raise ConfigError(exc.problem, path=path, line=line, hint=exc.hint) from exc
        parent_real = parent.resolve()
        chain = [*stack, real]
        if parent_real in chain:
            names = [p.name for p in chain[chain.index(parent_real):]] + [parent_real.name]
            raise ConfigError(f"defaults cycle: {' -> '.join(names)}", path=path, line=line)
        result = _merge(result, _load_chain(parent, chain, info, config_dir), path)
    return result


def load_config(config: str, config_dir: str | os.PathLike[str]) -> tuple[DictConfig, LoadedConfig]:
    """Load config ``config`` (name or path) with its ``defaults:`` chain, no overrides.

    ``defaults`` entries are looked up next to the file naming them, then in
    ``config_dir``.
    """
    path = resolve_config_path(config, config_dir)
    info = LoadedConfig(name=config, path=path)
    cfg = _load_chain(path, [], info, Path(config_dir))
    return cfg, info


class ConfigChoice(Protocol):
    """What :func:`parse_config` reads of a command line: a
    :class:`~nemo_runspec.cmdline.context.GlobalContext`, or anything with these two
    (a ``multirun`` attribute, when there is one, allows ``a=1,2`` values)."""

    @property
    def config(self) -> str | None:
        """``-c/--config``: a config name in the recipe's config dir, or a YAML path; None for the default."""
        ...

    @property
    def overrides(self) -> Sequence[str]:
        """The ``key=value`` overrides, in command-line order."""
        ...


def parse_config(ctx: ConfigChoice, config_dir: str | os.PathLike[str], default_config: str, *,
                 empty_without_dir: bool = False) -> DictConfig:
    """Load the recipe config selected on the command line and apply its overrides.

    ``ctx`` is a :class:`~nemo_runspec.cmdline.context.GlobalContext` (anything with
    ``.config`` and ``.overrides``). The config is ``ctx.config`` if set, else
    ``default_config``; see the module docstring for names, paths and
    ``defaults:``. Interpolations are kept unresolved. With ``empty_without_dir``
    (a script whose runspec names no configs) and no ``config_dir`` on disk, no
    ``-c`` gives an empty config, to which overrides add keys with ``+key=value``.
    """
    from omegaconf import OmegaConf

    from nemo_runspec.config.overrides import apply_overrides

    if empty_without_dir and not ctx.config and not _exists(Path(config_dir)):
        return apply_overrides(OmegaConf.create({}), list(ctx.overrides))
    name = ctx.config or default_config
    cfg, info = load_config(name, config_dir)
    overrides = list(ctx.overrides)
    if not getattr(ctx, "multirun", False):  # optional: a ConfigChoice need not have it  # `a=1,2` on a number without -m: say so
        from nemo_runspec.config.sweep import refuse_unmarked_sweeps

        refuse_unmarked_sweeps(lambda: OmegaConf.to_container(cfg, resolve=False), overrides)
    cfg = apply_overrides(cfg, overrides)
    _remember(cfg, info)
    return cfg


def load_config_file(path: str | os.PathLike[str], overrides: list[str] | tuple[str, ...] = (),
                     *, source: str = "command line") -> DictConfig:
    """The loader of recipe scripts (locally and on the cluster): one YAML file,
    its ``defaults:`` chain looked up next to it, then ``key=value`` overrides
    with the grammar and typo checks the CLI uses (:func:`apply_overrides`).

    Interpolations (``${art:...}``) are kept unresolved.
    """
    from nemo_runspec.config.overrides import apply_overrides

    p = Path(path).expanduser()
    cfg, _ = load_config(str(p if p.is_absolute() else Path.cwd() / p), p.parent)
    return apply_overrides(cfg, list(overrides), source=source)
