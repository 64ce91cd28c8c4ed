"""The packager names and which profile keys each packager reads (declared once here;
env.toml validation and :mod:`nemo_runspec.packaging.select` both read them).

The names sit here, in ``env``, because env.toml validation (the lowest layer that needs
them) must not import ``packaging``, which imports ``env``.

A key that the chosen packager does not read is an error rather than ignored:
``packager_relative_path`` with ``packager = "git"`` would otherwise look like
it did something.
"""

from __future__ import annotations

from collections.abc import Mapping

#: ``packager = NAME``: every packager, in the order messages list them
PACKAGERS: tuple[str, ...] = ("git", "pattern", "hybrid", "none", "self_contained", "code")
#: ``[PROFILE.packagers.NAME] packager = NAME``: the packagers a hybrid one is made of
SUB_PACKAGERS: tuple[str, ...] = ("git", "pattern", "code", "self_contained")

#: profile key -> the packagers that read it
PROFILE_KEY_USERS: Mapping[str, tuple[str, ...]] = {
    "packager_include_pattern": ("git", "pattern"),
    "packager_relative_path": ("pattern",),
    "packager_subpath": ("git", "code"),
    "check_uncommitted": ("git", "hybrid"),
    "include_submodules": ("git", "hybrid"),
    "packagers": ("hybrid",),
    "workdir": ("none",),
}

#: ``[PROFILE.packagers.NAME]`` key -> the sub-packagers that read it
SUB_KEY_USERS: Mapping[str, tuple[str, ...]] = {
    "include_pattern": ("git", "pattern"),
    "relative_path": ("pattern",),
    "subpath": ("git", "code"),
    "check_uncommitted": ("git",),
    "include_submodules": ("git",),
}


def unused_keys(packager: str, keys: Mapping[str, object] | set[str], *, sub: bool = False) -> list[str]:
    """The keys of ``keys`` (set ones: a mapping's ``None`` values are unset) that
    ``packager`` does not read, in table order."""
    table = SUB_KEY_USERS if sub else PROFILE_KEY_USERS
    present = {k for k, v in keys.items() if v is not None} if isinstance(keys, Mapping) else set(keys)
    return [k for k in table if k in present and packager not in table[k]]


def unused_message(key: str, value: object, packager: str, *, sub: bool = False,
                   default_reason: str | None = None) -> str:
    """``KEY = VALUE is not used by packager = "X" (read by: ...; remove it)``: one line,
    starting with the key so validation places it at that key's line. With
    ``default_reason`` the packager is the recipe's default (the profile names none):
    the line says so and why that default was chosen."""
    users = (SUB_KEY_USERS if sub else PROFILE_KEY_USERS)[key]
    if isinstance(value, bool):
        shown = str(value).lower()
    elif isinstance(value, str | int | float):
        shown = repr(value)
    else:
        shown = "[...]" if isinstance(value, list | tuple) else "{...}"
    readers = " or ".join(repr(u) for u in users)
    if default_reason is not None:
        return (f'{key} = {shown} is not used by packager = "{packager}", the default for this recipe since the '
                f'profile names no packager ({default_reason}); it is read only by packager = {readers}: '
                f'set packager = {users[0]!r} in the profile or remove the key')
    return (f'{key} = {shown} is not used by packager = "{packager}" '
            f'(read only by packager = {readers}; remove it or change packager)')
