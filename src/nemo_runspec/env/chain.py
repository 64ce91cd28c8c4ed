"""``extends`` chains of one env.toml, resolved in linear time.

A profile's chain (itself, its parent, ...) is followed once; each profile's own
table is interpolated, read in the reference's forms and validated once
(:func:`layer`), and each profile's merged values are its parent's merged
values with its own table on top (:func:`merged`). Results are kept on the
:class:`~nemo_runspec.env.file.EnvFile` (per process environment, since
``${oc.env:...}`` depends on it), so checking every profile of a file whose
chains are 1,000 deep touches each table once, not once per descendant.

A cycle is reported the same way from every profile that reaches it (its
members listed from the one written first in the file, long cycles shortened),
so a command checking every profile can print it once.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Mapping
from typing import Any

from nemo_runspec._suggest import did_you_mean
from nemo_runspec.env.file import RESERVED_SECTIONS, EnvFile, interpolate, where_in
from nemo_runspec.env.reference import Note, normalize_layer
from nemo_runspec.env.resources import fold_profile_alias
from nemo_runspec.env.validation import toml_type, validate_layer
from nemo_runspec.errors import EnvFileError

#: Names of a cycle shown in full; longer cycles show the first and last few.
CYCLE_SHOWN = 8

Layer = tuple[dict[str, Any], dict[str, str], list[Note]]
Merged = tuple[dict[str, Any], dict[tuple[str, ...], str], list[Note]]


def _cache(ef: EnvFile) -> dict[str, dict[str, Any]]:
    """The memo of ``ef`` for the current environment (``${oc.env:...}`` reads it)."""
    key = hash(frozenset(os.environ.items()))
    memo = ef.__dict__.get("_chain_memo")
    if memo is None or memo["env"] != key:
        memo = {"env": key, "chains": {}, "layers": {}, "merged": {}}
        ef.__dict__["_chain_memo"] = memo
    return memo


def unknown_profile(ef: EnvFile, name: str) -> EnvFileError:
    """The error for a name that is not a profile of ``ef`` (a special section, a typo)."""
    if name in RESERVED_SECTIONS:
        return EnvFileError(
            f"[{name}] is a special section, not an execution profile",
            path=ef.path,
            line=ef.line_of(name),
            hint=did_you_mean(name, ef.profiles, listing=True) if ef.profiles else "the file defines no profiles",
        )
    if not ef.profiles:
        return EnvFileError(f"unknown profile {name!r}: the file defines no profiles", path=ef.path)
    return EnvFileError(f"unknown profile {name!r}", path=ef.path, hint=did_you_mean(name, ef.profiles, listing=True))


def _parent(ef: EnvFile, current: str) -> str | None:
    parent = ef.profiles[current].get("extends")
    if parent is None:
        return None
    line = ef.line_of(current, "extends")
    if not isinstance(parent, str):
        raise EnvFileError(
            f"key 'extends' in [{current}] must be a string (a profile name), got {toml_type(parent)} {parent!r:.80}",
            path=ef.path, line=line, key="extends",
        )
    if parent in RESERVED_SECTIONS:
        raise EnvFileError(
            f"[{current}] extends [{parent}], which is a special section, not a profile",
            path=ef.path, line=line, key="extends", hint=did_you_mean(parent, ef.profiles, listing=True),
        )
    if parent not in ef.profiles:
        raise EnvFileError(
            f"[{current}] extends unknown profile {parent!r:.80}",
            path=ef.path, line=line, key="extends", hint=did_you_mean(parent, ef.profiles, listing=True),
        )
    return parent


def _cycle_error(ef: EnvFile, cycle: list[str]) -> EnvFileError:
    order = {name: i for i, name in enumerate(ef.profiles)}
    start = min(range(len(cycle)), key=lambda i: order[cycle[i]])
    members = cycle[start:] + cycle[:start]
    names = [*members, members[0]]
    if len(names) > CYCLE_SHOWN:
        names = [*names[:4], f"... ({len(names) - 7} more)", *names[-3:]]
    return EnvFileError(
        f"extends cycle of {len(members)} profile(s): " + " -> ".join(names),
        path=ef.path, line=ef.line_of(members[0], "extends"), key="extends",
        hint="one profile of the cycle must not extend another",
    )


def resolve_chain(ef: EnvFile, name: str) -> list[str]:
    """``[name, parent, grandparent, ...]``; an unknown name or parent, a parent that is a
    special section, or a cycle is an :class:`EnvFileError` at the ``extends`` line."""
    if name not in ef.profiles:
        raise unknown_profile(ef, name)
    chains: dict[str, Any] = _cache(ef)["chains"]
    path: list[str] = []
    on_path: dict[str, int] = {}
    current: str | None = name
    while current is not None and current not in chains:
        on_path[current] = len(path)
        path.append(current)
        try:
            parent = _parent(ef, current)
        except EnvFileError as exc:
            parent, failure = None, exc
        else:
            failure = None
            if parent is not None and parent in on_path:
                failure = _cycle_error(ef, path[on_path[parent]:])
        if failure is not None:
            for member in path:
                chains[member] = failure
            raise failure
        current = parent
    tail: Any = chains[current] if current is not None else []
    if isinstance(tail, EnvFileError):
        for member in path:
            chains[member] = tail
        raise tail
    for i in range(len(path) - 1, -1, -1):
        tail = [path[i], *tail]
        chains[path[i]] = tail
    return list(chains[name])


def layer(ef: EnvFile, prof: str, memo: dict[str, Any] | None = None) -> Layer:
    """Profile ``prof``'s own table, interpolated, read in the reference's forms and
    validated: ``(values, renames, notes)``. Done once per profile."""
    layers = (memo or _cache(ef))["layers"]
    if prof not in layers:
        notes: list[Note] = []
        try:
            values = interpolate(ef.profiles[prof], (), where_in(ef, prof))
            values, renames = normalize_layer(values, table=f"[{prof}]", where=where_in(ef, prof), notes=notes)
            validate_layer(values, ef, prof, renames)
            values = fold_profile_alias(values, profile=prof, path=ef.path,
                                        line=ef.line_of(prof, "nproc_per_node"))
            layers[prof] = (values, renames, notes)
        except EnvFileError as exc:
            layers[prof] = exc
    hit = layers[prof]
    if isinstance(hit, EnvFileError):
        raise hit.with_traceback(None)
    return hit


def merged(ef: EnvFile, chain: list[str]) -> Merged:
    """The values of ``chain[0]`` with its ancestors' beneath (tables merged key by key,
    lists replaced), the profile that set each key path, and the notes of every table
    read in the reference's forms (child first); fresh copies. A table's problem is
    raised child first, as the chain is read."""
    cache = _cache(ef)
    memo: dict[str, Merged] = cache["merged"]
    start = next((i for i, prof in enumerate(chain) if prof in memo), len(chain))
    for prof in chain[:start]:
        layer(ef, prof, cache)
    for i in range(start - 1, -1, -1):
        prof = chain[i]
        values, _, notes = layer(ef, prof, cache)
        if i + 1 < len(chain):
            below = memo[chain[i + 1]]
            base, owners, notes = copy.deepcopy(below[0]), dict(below[1]), [*notes, *below[2]]
        else:
            base, owners = {}, {}
        merge_into(base, values, (), prof, owners)
        memo[prof] = (base, owners, list(notes))
    values, owners, notes = memo[chain[0]]
    return copy.deepcopy(values), dict(owners), list(notes)


def merge_into(dst: dict[str, Any], src: Mapping[str, Any], prefix: tuple[str, ...], profile: str,
               owners: dict[tuple[str, ...], str]) -> None:
    """Deep-merge ``src`` into ``dst`` (tables key by key, lists replaced); ``owners``
    records which profile set each key path."""
    for key, value in src.items():
        path = (*prefix, key)
        owners[path] = profile
        if isinstance(value, dict) and isinstance(dst.get(key), dict):
            merge_into(dst[key], value, path, profile, owners)
        else:
            # Drop owners of nested keys that this value replaces.
            for stale in [p for p in owners if p[: len(path)] == path and len(p) > len(path)]:
                del owners[stale]
            dst[key] = copy.deepcopy(value)
            if isinstance(value, dict):
                _mark(value, path, profile, owners)


def _mark(value: Mapping[str, Any], prefix: tuple[str, ...], profile: str, owners: dict) -> None:
    for key, sub in value.items():
        owners[(*prefix, key)] = profile
        if isinstance(sub, dict):
            _mark(sub, (*prefix, key), profile, owners)
