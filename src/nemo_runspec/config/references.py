"""``${NAME}`` in a recipe config that names no key: a shell habit, found before the job runs.

In a recipe config every ``${...}`` is OmegaConf's and the job resolves it when it
reads its config: a key reference (``${model.seq_length}``) names a key of the
config, a resolver (``${art:...}``, ``${oc.env:VAR}``) runs in the job. A shell
habit such as ``${HOME}`` in a YAML value or a ``key=value`` override is a
reference to a top-level key ``HOME`` the config does not have; the job would stop
with OmegaConf's ``InterpolationKeyError``. :func:`check_key_references` says so
first, in one line naming the key, the override that set it, and the two fixes.
Dotted references are left to the job: a config may be completed there (NeMo-RL's
base config supplies ``policy.model_name``). (``run.env`` holds no
interpolations: its ``$`` forms are the job shell's, :mod:`nemo_runspec.dollar`.)
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence

from nemo_runspec.errors import ConfigError

# ${key.path} / ${.rel} with no resolver (no "name:" inside), not escaped
_KEY_REF = re.compile(r"(?<!\\)\$\{\s*([A-Za-z0-9_.\[\]-]*)\s*\}")
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _strings(node: object, path: tuple[str, ...]) -> Iterator[tuple[tuple[str, ...], str]]:
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _strings(value, (*path, str(key)))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _strings(value, (*path, str(i)))
    elif isinstance(node, str):
        yield path, node


def check_key_references(cfg: object, overrides: Sequence[str] = ()) -> None:
    """Raise a one-line :class:`ConfigError` for the first value of ``cfg`` (a DictConfig)
    holding ``${NAME}`` where ``NAME`` is no top-level key of ``cfg``."""
    from omegaconf import OmegaConf

    data = OmegaConf.to_container(cfg, resolve=False)
    top = set(data) if isinstance(data, dict) else set()
    for path, text in _strings(data, ()):
        if path[:2] in (("run", "env"), ("run", "cli")):
            continue  # shell text and the command line as typed, stored escaped
        ref = next((r for r in _KEY_REF.findall(text) if _WORD.fullmatch(r) and r not in top), None)
        if ref is None:
            continue
        dotted = ".".join(path)
        override = next((o for o in reversed(overrides) if o.lstrip("+~").split("=", 1)[0] == dotted), None)
        where = f" in override '{override}'" if override else ""
        raise ConfigError(
            f"key '{dotted}'{where}: ${{{ref}}} refers to a config key '{ref}', which does not exist",
            key=dotted,
            hint=f"an environment variable of the job is ${{oc.env:{ref}}}; the text ${{{ref}}} itself is \\${{{ref}}}")
