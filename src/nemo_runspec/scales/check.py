"""What ``nemotron runspec validate`` checks of a scale matrix beyond its syntax: that the
configs it names exist, and that every override names a key of each config it is for."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from nemo_runspec.errors import RunspecError

if TYPE_CHECKING:
    from nemo_runspec.spec.models import Runspec


def check_against_configs(spec: Runspec) -> list[RunspecError]:
    """One :class:`RunspecError` per problem (empty when the matrix fits the configs)."""
    from nemo_runspec._suggest import did_you_mean

    errors: list[RunspecError] = []
    if not spec.scales:
        return errors
    names = sorted(p.stem for p in spec.config_dir.glob("*.yaml")) if spec.config_dir.is_dir() else []
    loaded: dict[str, Any] = {}
    for entry in spec.scales:
        where = f"scales[{entry.index}]"
        for config in entry.configs or names:
            if config not in names:
                errors.append(RunspecError(f"{where} is for config {config!r}, which {spec.config_dir} does not have",
                                           path=spec.script_path, key=f"{where}.configs",
                                           hint=did_you_mean(config, names, listing=True)))
                continue
            data = loaded.get(config)
            if data is None:
                data = loaded[config] = _load(spec, config)
            for key in entry.overrides:
                if not _has(data, key):
                    errors.append(RunspecError(
                        f"{where}.overrides sets {key!r}, which config {config!r} does not have",
                        path=spec.script_path, key=f"{where}.overrides",
                        hint=_hint(data, key) or "overrides change existing keys of the config"))
    return errors


def _load(spec: Runspec, config: str) -> dict[str, Any]:
    from omegaconf import OmegaConf

    from nemo_runspec.config.loader import load_config

    cfg, _ = load_config(config, spec.config_dir)
    data = OmegaConf.to_container(cfg, resolve=False)
    return data if isinstance(data, dict) else {}


def _has(data: object, key: str) -> bool:
    node = data
    for part in key.split("."):
        if not isinstance(node, dict) or part not in node:
            return False
        node = node[part]
    return True


def _hint(data: object, key: str) -> str | None:
    from nemo_runspec._suggest import closest

    node, done = data, []
    for part in key.split("."):
        if not isinstance(node, dict):
            return None
        if part not in node:
            best = closest(part, [str(k) for k in node])
            return f"did you mean '{'.'.join([*done, best])}'?" if best else None
        done.append(part)
        node = node[part]
    return None
