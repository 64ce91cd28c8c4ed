"""A resolved execution profile: ``extends`` followed, tables merged, values validated.

Each value remembers where it was set (:class:`Source`), so ``nemotron env
show`` and job provenance can cite ``env.toml:12 [dev]``.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Protocol

from nemo_runspec.env.chain import layer, resolve_chain
from nemo_runspec.env.chain import merged as merged_values
from nemo_runspec.env.discovery import ENV_FILE_VAR, find_env_file, not_found_error
from nemo_runspec.env.file import EnvFile, load_env_file
from nemo_runspec.env.reference import Note, normalize_merged, translate_mapping
from nemo_runspec.env.sections import read_sections
from nemo_runspec.env.validation import validate_complete
from nemo_runspec.secrets import find_secret_values, redact


def _display_path(path: str | os.PathLike[str] | None) -> str | None:
    if path is None:
        return None
    p = Path(path)
    try:
        rel = p.absolute().relative_to(Path.cwd())
    except ValueError:
        return str(p)
    return str(rel)


@dataclass(frozen=True)
class Source:
    """Where a resolved value was set: profile, file and line."""

    profile: str | None
    path: str | None
    line: int | None

    @property
    def label(self) -> str:
        """Human label such as ``env.toml:12 [dev]`` (path relative to cwd when inside it)."""
        where = _display_path(self.path) or "<default>"
        if self.line is not None:
            where += f":{self.line}"
        if self.profile is not None:
            where += f" [{self.profile}]"
        return where

    def __str__(self) -> str:
        return self.label


_MISSING: Final = object()


class EnvProfile(Mapping[str, Any]):
    """A resolved execution profile, and a read-only mapping of its set keys.

    ``values`` holds only keys set in env.toml (after ``extends`` merging and
    ``${oc.env:...}`` resolution), never defaults; :meth:`get` falls back to
    the documented defaults. ``sources`` maps each key (and each nested key of a
    table, dotted: ``env_vars.HF_HOME``) to the :class:`Source` that set it.
    ``chain`` lists the profile and its ancestors, child first. ``notes`` say
    what was read in the reference system's form (``container`` as
    ``container_image``, ...; see :mod:`nemo_runspec.env.reference`).

    As a mapping it reads like the reference's profile: ``env["nodes"]`` (a
    documented default when unset, ``KeyError`` for unknown keys),
    ``env.get("nodes", 1)``, ``"account" in env``, ``len(env)``, ``dict(env)``,
    ``env.keys()``, ``env.items()``, and ``env.nodes`` for a profile key that is
    not an attribute of its own. ``env.values`` stays the dict of set keys (not
    a method). A profile is always true, even with no keys set. For an
    OmegaConf config of it use ``OmegaConf.create(dict(env))`` (OmegaConf takes
    plain dicts only).
    """

    #: the set keys (an attribute that shadows Mapping.values, as the reference's profile has it)
    values: dict[str, Any]  # type: ignore[assignment]

    def __init__(self, name: str, path: Path | None, chain: list[str], values: dict[str, Any],
                 sources: dict[str, Source], notes: list[Note] | None = None) -> None:
        self.name = name
        self.path = path
        self.chain = chain
        self.values = values  # type: ignore[assignment]  # the set keys (shadows Mapping.values)
        self.sources = sources
        self.notes = list(notes or [])

    @classmethod
    def read(cls, env: EnvProfile | Mapping[str, object] | None, name: str | None = None) -> EnvProfile | None:
        """``env`` as a profile: an ``EnvProfile`` or None as it is; a plain mapping or ``DictConfig`` (as the reference's callers pass
        one) read like an env.toml profile (``container``, ``env_vars`` lists:
        :func:`~nemo_runspec.env.reference.translate_mapping`), named ``name``, its values'
        source ``env profile [name]``; anything else is an ``EnvFileError``."""
        if env is None or isinstance(env, EnvProfile):
            return env
        notes: list[Note] = []
        values = translate_mapping(env, table="env_profile", validate=False, notes=notes)
        where = Source(name, "env profile", None)
        return cls(name or "", None, [name] if name else [], values, dict.fromkeys(values, where), notes)

    def __repr__(self) -> str:
        return f"EnvProfile(name={self.name!r}, path={self.path!r}, chain={self.chain!r}, values={self.values!r})"

    def __eq__(self, other: object) -> bool:
        if isinstance(other, EnvProfile):
            return (self.name, self.path, self.chain, self.values, self.sources, self.notes) == \
                (other.name, other.path, other.chain, other.values, other.sources, other.notes)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # mutable, as the dataclass it was

    @property
    def executor(self) -> str:
        """``local``, ``slurm``, or one of nemo-run's other executors."""
        return self.get("executor")

    @property
    def description(self) -> str | None:
        """The profile's ``description``, if any."""
        return self.values.get("description")

    def get(self, key: str, default: Any = _MISSING) -> Any:
        """The value of ``key``: set value, else ``default`` if given, else its documented default."""
        if key in self.values:
            return self.values[key]
        if default is not _MISSING:
            return default
        return profile_defaults().get(key)

    def __contains__(self, key: object) -> bool:
        return key in self.values

    def __getitem__(self, key: str) -> Any:
        if key in self.values:
            return self.values[key]
        defaults = profile_defaults()
        if key in defaults:
            return defaults[key]
        raise KeyError(key)

    def __iter__(self) -> Iterator[str]:
        return iter(self.values)

    def __len__(self) -> int:
        return len(self.values)

    def __bool__(self) -> bool:
        return True

    def __getattr__(self, key: str) -> Any:
        # only reached for names that are not attributes: profile keys (``env.nodes``)
        if key.startswith("_") or "values" not in self.__dict__:
            raise AttributeError(key)
        from nemo_runspec.env.model import EnvProfileModel

        if key in self.values or key in EnvProfileModel.model_fields:
            return self.get(key)
        raise AttributeError(f"{key!r} is not a profile key")

    def keys(self) -> list[str]:  # type: ignore[override]
        """The keys set in env.toml (after ``extends``)."""
        return list(self.values)

    def items(self) -> list[tuple[str, Any]]:  # type: ignore[override]
        """``(key, value)`` of the keys set in env.toml."""
        return list(self.values.items())

    def partition_for(self, mode: str) -> str | None:
        """Partition for ``mode`` (see :func:`partition_for`)."""
        return partition_for(self.values, mode)

    def redacted_values(self) -> dict[str, Any]:
        """``values`` with secret-looking entries (and their values anywhere) redacted."""
        return redact(self.values, extra_values=find_secret_values(self.values))

    def to_dict(self, *, redacted: bool = False) -> dict[str, Any]:
        """Plain-data form: name, path, chain, values, sources (labels), notes."""
        return {
            "name": self.name,
            "path": str(self.path) if self.path is not None else None,
            "chain": list(self.chain),
            "values": self.redacted_values() if redacted else copy.deepcopy(self.values),
            "sources": {k: s.label for k, s in self.sources.items()},
            "notes": [str(n) for n in self.notes],
        }


def partition_for(values: Mapping[str, Any], mode: str) -> str | None:
    """``run_partition`` for ``--run``, ``batch_partition`` for ``--batch``, else ``partition``."""
    specific = {"run": "run_partition", "batch": "batch_partition"}.get(mode)
    if specific and values.get(specific):
        return values[specific]
    return values.get("partition")


def profile_values(env: EnvProfile | Mapping[str, object] | None, *, validate: bool = False, table: str = "env",
                   notes: list[Note] | None = None) -> dict[str, Any]:
    """The set keys of ``env`` (an ``EnvProfile`` or a plain mapping), without ``None`` values.

    A plain mapping (``dict``, ``DictConfig``) is read as an env.toml profile
    (:func:`~nemo_runspec.env.reference.translate_mapping`): ``container`` is
    ``container_image``, an ``env_vars`` list is a table; with ``validate`` it is
    also checked like a profile (unknown keys, types), an ``EnvFileError`` naming
    ``table``; what was translated is appended to ``notes``.
    """
    if env is None:
        return {}
    if isinstance(env, EnvProfile):  # read, translated and validated already
        return {k: v for k, v in env.values.items() if v is not None}
    return translate_mapping(env, table=table, validate=validate, notes=notes)


def profile_defaults() -> dict[str, Any]:
    """Documented defaults of profile keys (applied by :meth:`EnvProfile.get`)."""
    from nemo_runspec.env.model import PROFILE_DEFAULTS

    return dict(PROFILE_DEFAULTS)


def _coerce_env_file(env_file: str | os.PathLike[str] | EnvFile | None, profile: str | None) -> EnvFile:
    if isinstance(env_file, EnvFile):
        return env_file
    if env_file is None:
        found = find_env_file()
        if found is None:
            raise not_found_error(profile)
        return load_env_file(found)
    return load_env_file(env_file)


def load_env_profile(
    name: str, env_file: str | os.PathLike[str] | EnvFile | None = None
) -> EnvProfile:
    """Resolve profile ``name``: follow ``extends``, merge, interpolate, validate.

    ``env_file`` is a path, an already loaded :class:`EnvFile`, or None to
    discover one with :func:`find_env_file`.
    """
    ef = _coerce_env_file(env_file, name)
    chain = resolve_chain(ef, name)
    merged, owners, notes = merged_values(ef, chain)

    def line_of(prof: str, path: tuple[str, ...]) -> int | None:
        written = layer(ef, prof)[1].get(path[0], path[0])  # the user's own spelling (container)
        return ef.line_of(prof, written, *path[1:])

    sources = {
        ".".join(path): Source(prof, str(ef.path), line_of(prof, path))
        for path, prof in sorted(owners.items())
    }

    def where(keypath: tuple[str, ...]) -> tuple[str | None, int | None]:
        src = sources.get(".".join(keypath))
        return (src.path, src.line) if src is not None else (str(ef.path), ef.line_of(name))

    kept = normalize_merged(merged, table=f"[{name}]", where=where, notes=notes)
    for key in set(merged) - set(kept):
        sources = {k: v for k, v in sources.items() if k != key and not k.startswith(key + ".")}
    validate_complete(kept, ef, name, sources)
    return EnvProfile(name=name, path=ef.path, chain=chain, values=kept, sources=sources, notes=notes)


class ProfileChoice(Protocol):
    """What :func:`parse_env` reads of a command line: a
    :class:`~nemo_runspec.cmdline.context.GlobalContext`, or anything with these two."""

    @property
    def profile(self) -> str | None:
        """The profile named by ``--run``/``--batch``; None runs here (local mode)."""
        ...

    @property
    def env_file(self) -> str | None:
        """``--env-file``: the env.toml to read; None looks it up as usual."""
        ...


def parse_env(ctx: ProfileChoice) -> EnvProfile | None:
    """The profile selected on the command line, or None in local mode.

    ``ctx`` is a :class:`~nemo_runspec.cmdline.context.GlobalContext` (anything with
    ``.profile`` and ``.env_file``). A profile without any env.toml to read is an
    error saying where we looked and how to create one.
    """
    name = ctx.profile
    explicit = ctx.env_file
    if name is None:
        if explicit or os.environ.get(ENV_FILE_VAR):
            find_env_file(explicit)  # a missing named env file is an error even in local mode
        return None
    path = find_env_file(explicit)
    if path is None:
        raise not_found_error(name)
    ef = load_env_file(path)  # read once for the profile and the special sections
    profile = load_env_profile(name, ef)
    # The special sections matter to this job too (W&B, artifact root, caches):
    # a typo there must fail now, not only under `nemotron env list`.
    read_sections(ef)
    return profile
