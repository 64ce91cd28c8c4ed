"""Which env.toml a command uses: ``--env-file``, ``$NEMOTRON_ENV_FILE``, or the nearest one.

Standard library only: ``nemotron --help`` uses this module to list profiles.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from nemo_runspec.errors import EnvFileError

ENV_FILE_NAME = "env.toml"
ENV_FILE_VAR = "NEMOTRON_ENV_FILE"
#: Files/dirs that mark the project root, where the upward search stops.
ROOT_MARKERS = (".git", "pyproject.toml")

CREATE_HINT = (
    "create one with `cp env.toml.example env.toml` at the project root, "
    f"or pass --env-file PATH, or set {ENV_FILE_VAR}"
)


def project_root(start: Path) -> Path | None:
    """The first directory from ``start`` upwards holding a :data:`ROOT_MARKERS` entry."""
    for d in (start, *start.parents):
        if any(_exists(d / m) for m in ROOT_MARKERS):
            return d
    return None


def _exists(path: Path) -> bool:
    """``path.exists()``, False (not an exception) where a directory cannot be searched."""
    try:
        return path.exists()
    except OSError:
        return False


def search_dirs(start: Path) -> list[Path]:
    """Directories searched for env.toml: ``start`` up to the project root, inclusive.

    Outside any project (no ``.git``/``pyproject.toml`` above) only ``start``
    itself is searched, so a stray ``~/env.toml`` is never picked up by accident.
    """
    root = project_root(start)
    if root is None:
        return [start]
    dirs = []
    for d in (start, *start.parents):
        dirs.append(d)
        if d == root:
            break
    return dirs


def as_env_file(value: str | os.PathLike[str]) -> Path:
    """``value`` as an absolute path; a directory means ``DIR/env.toml``."""
    path = Path(os.path.expanduser(os.fspath(value))).absolute()
    try:
        is_dir = path.is_dir()
    except OSError:  # not searchable: reported when it is read
        is_dir = False
    return path / ENV_FILE_NAME if is_dir else path


_FILE_KINDS = {
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
    stat.S_IFIFO: "a named pipe",
    stat.S_IFSOCK: "a socket",
}


def _explicit_path(value: str | os.PathLike[str], origin: str) -> Path:
    """The env file ``value`` names; an error unless it is an existing regular file.

    An empty regular file is fine (an env.toml without profiles); a device such
    as ``/dev/null``, a pipe or a socket is refused, naming what it is.
    """
    path = as_env_file(value)
    try:
        mode = path.stat().st_mode
    except (FileNotFoundError, NotADirectoryError):
        raise EnvFileError(
            f"env file {str(path)!r} given by {origin} does not exist",
            path=path,
            hint=CREATE_HINT,
        ) from None
    except OSError as exc:
        raise EnvFileError(
            f"cannot read the env file given by {origin}: {exc.strerror or exc}", path=path
        ) from None
    if not stat.S_ISREG(mode):
        kind = _FILE_KINDS.get(stat.S_IFMT(mode), "not a regular file")
        raise EnvFileError(
            f"the env file given by {origin} is {kind}, not a regular file",
            path=path,
            hint="pass an env.toml file; an empty file means no profiles",
        )
    return path


def explicit_env_file(explicit: str | os.PathLike[str] | None = None) -> tuple[str, str] | None:
    """``(value, origin)`` of an env file named by ``--env-file`` or ``$NEMOTRON_ENV_FILE``."""
    if explicit is not None and os.fspath(explicit) != "":
        return os.fspath(explicit), "--env-file"
    from_env = os.environ.get(ENV_FILE_VAR)
    if from_env:
        return from_env, f"${ENV_FILE_VAR}"
    return None


def find_env_file(
    explicit: str | os.PathLike[str] | None = None, start: Path | None = None
) -> Path | None:
    """Locate the env.toml to use, or None when there is none.

    Order: ``explicit`` (``--env-file``) > ``$NEMOTRON_ENV_FILE`` > the first
    ``env.toml`` walking up from ``start`` (default: the current directory) to
    the project root (first directory holding ``.git`` or ``pyproject.toml``),
    never beyond it. An explicit or env-var path that does not exist is an
    :class:`EnvFileError` naming it (a directory means ``DIR/env.toml``).
    """
    named = explicit_env_file(explicit)
    if named is not None:
        return _explicit_path(*named)
    for d in search_dirs(Path(start if start is not None else Path.cwd()).absolute()):
        candidate = d / ENV_FILE_NAME
        if _exists(candidate) and candidate.is_file():
            return candidate
    return None


def not_found_error(profile: str | None, start: Path | None = None) -> EnvFileError:
    """The error for a profile requested where no env.toml exists: where we looked, how to fix."""
    start = Path(start if start is not None else Path.cwd()).absolute()
    dirs = search_dirs(start)
    looked = ", ".join(str(d / ENV_FILE_NAME) for d in dirs)
    what = f"profile {profile!r} was requested but " if profile else ""
    if project_root(start) is None:
        stop = f"no project root (.git or pyproject.toml) above {start}, so only it was searched"
    else:
        stop = f"stopped at the project root {dirs[-1]}"
    return EnvFileError(
        f"{what}no {ENV_FILE_NAME} was found; looked in {looked} ({stop}) "
        f"and ${ENV_FILE_VAR} is not set",
        hint=CREATE_HINT,
    )
