"""The backends by executor name: the one place the names are declared.

``executor = NAME`` in env.toml names a backend: one of :data:`BUILTIN`, or one an installed
distribution registers under the entry-point group :data:`ENTRY_POINT_GROUP`::

    [project.entry-points."nemo_runspec.backends"]
    toy = "toy_backend:ToyBackend"

The entry point's name is the executor name and must equal the class's ``name``. Entry points
are read only for a name that is not built in (once per process), so a profile naming a
built-in never scans the installed distributions; a plug-in named like a built-in is never
used. env.toml validation reads the names here (:func:`is_backend`) and each backend's
declared keys through :func:`declared`; shared code asks a backend's class what differs
between executors (:func:`backend_class`), never compares names.

It sits in ``env`` because env.toml validation, the lowest layer that needs the names, must
not import the backends (they import the layers above it): a backend class is loaded by its
``module:Class`` string, and the backend modules import only the standard library and the
layers below at import. :mod:`nemo_runspec.backends` hands these names on. Standard library
only (``nemotron --help`` must stay cheap).
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from nemo_runspec.errors import ConfigError

if TYPE_CHECKING:
    from importlib.metadata import EntryPoint

    from nemo_runspec.env.keys import ProfileKeys

ENTRY_POINT_GROUP = "nemo_runspec.backends"

#: executor name -> "module:Class", in the order messages list them
BUILTIN: Mapping[str, str] = {
    "local": "nemo_runspec.backends.local:LocalBackend",
    "slurm": "nemo_runspec.backends.slurm:SlurmBackend",
    "docker": "nemo_runspec.backends.docker:DockerBackend",
    "skypilot": "nemo_runspec.backends.skypilot:SkypilotBackend",
    "dgxcloud": "nemo_runspec.backends.dgxcloud:DgxCloudBackend",
    "lepton": "nemo_runspec.backends.lepton:LeptonBackend",
}

#: the executor of a profile without ``executor`` (and of no profile): this machine
DEFAULT_EXECUTOR = "local"


def builtin_names() -> tuple[str, ...]:
    """The built-in executor names, in the order messages list them."""
    return tuple(BUILTIN)


def is_backend(name: str) -> bool:
    """True when ``name`` is a built-in executor or an installed plug-in's."""
    return name in BUILTIN or name in _plugins()


def accept_plugin(value: object, handler: Callable[[object], object]) -> object:
    """pydantic wrap validator of env.toml's ``executor``: an installed plug-in's name passes;
    anything else is checked against the built-in names (whose message lists them)."""
    if isinstance(value, str) and value not in BUILTIN and value in _plugins():
        return value
    return handler(value)


def backend_class(name: str) -> type:
    """The backend class of executor ``name`` (a :class:`nemo_runspec.backends.base.Backend`); a
    one-line :class:`ConfigError` (exit 2) for a name nothing registers or a plug-in that does
    not load."""
    target = BUILTIN.get(name)
    if target is not None:
        module, _, attr = target.partition(":")
        return getattr(importlib.import_module(module), attr)
    entry = _plugins().get(name)
    if entry is None:
        raise ConfigError(f"no backend is registered for executor = {name!r}", key="executor",
                          hint=f"one of {', '.join(BUILTIN)}, or install the package that provides it "
                               f"(entry-point group {ENTRY_POINT_GROUP})")
    where = f"entry point {entry.name} = {entry.value}"
    if entry.dist is not None:
        where += f" (distribution {entry.dist.name} {entry.dist.version})"
    try:
        cls = entry.load()
    except Exception as exc:  # a plug-in's import failing is its own: one line, never a traceback
        raise ConfigError(f"executor = {name!r}: {where} failed to load: {type(exc).__name__}: {exc}",
                          key="executor", hint="reinstall the package that provides it") from exc
    if getattr(cls, "name", None) != name:
        raise ConfigError(f"executor = {name!r}: {where} gives a backend named {getattr(cls, 'name', None)!r}",
                          key="executor", hint="the entry point's name must be the backend's name")
    return cls


def declared(name: str) -> ProfileKeys:
    """What executor ``name``'s backend reads of env.toml (its class's ``profile``)."""
    return backend_class(name).profile


@functools.cache
def _plugins() -> dict[str, EntryPoint]:
    from importlib.metadata import entry_points

    return {ep.name: ep for ep in entry_points(group=ENTRY_POINT_GROUP) if ep.name not in BUILTIN}
