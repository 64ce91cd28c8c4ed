"""Git repositories mounted into a job's container: ``${auto_mount:git+URL@REF,/target}``.

A ``mounts`` entry written that way (env.toml, or ``run.env.mounts`` in a recipe
config, as the reference's recipes write it) names a repository and a place in
the container. At submission the repository is cloned or updated *on the
cluster*, through the job's tunnel, into ``[cache] git_dir`` (default
``<remote job dir>/git-cache``):

- ``<git_dir>/<name>.git`` is a ``--mirror`` clone, fetched again each time
  unless REF is a full commit it already has;
- ``<git_dir>/<name>/<commit>`` holds that commit's files (``git archive``,
  extracted to a temporary dir and renamed, so a half-written tree is never
  mounted); it is never changed again, so jobs that run while a branch moves
  keep the files they started with;
- updates of one repository are serialised with ``flock`` on ``<name>.lock``.

The job then mounts ``<git_dir>/<name>/<commit>:<target>``, and the commit is
recorded in its provenance (``run.provenance.git_mounts`` of ``job.yaml``).
``--dry-run`` shows the mount with ``<REF>`` in place of the commit and contacts
nothing. Every value is checked and shell-quoted. It needs a container (the
mount goes to pyxis); a bare-metal job with one is a one-line error.

:func:`clone_git_repos_via_tunnel` is the reference's call; :func:`sync` is what
submission uses.
"""

from __future__ import annotations

import posixpath
import re
import shlex
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from nemo_runspec.errors import ConfigError, ExecutionError

_ENTRY = re.compile(r"^\s*(?:\$\{auto_mount:(?P<a>[^}]*)\}|auto_mount:(?P<b>.*))\s*$")
_REF = re.compile(r"^[A-Za-z0-9._][A-Za-z0-9._/+-]*$")
_TARGET = re.compile(r"^/[A-Za-z0-9._/+-]*$")
_URL = re.compile(r"^[A-Za-z0-9._~:/?#@!$&'()*+,;=%-]+$")
DEFAULT_REF = "HEAD"


@dataclass(frozen=True)
class GitMount:
    """One repository to mount: ``url`` at ``ref``, in the container at ``target``."""

    url: str
    ref: str
    target: str
    name: str

    def as_dict(self) -> dict[str, str]:
        """The mount as the plain mapping ``git_mounts`` holds."""
        return {"url": self.url, "ref": self.ref, "target": self.target, "name": self.name}

    def placeholder(self, git_dir: str) -> str:
        """The container mount shown before the commit is known (a dry run)."""
        return f"{posixpath.join(git_dir, self.name)}/<{self.ref}>:{self.target}"


def is_auto_mount(entry: object) -> bool:
    """True for a ``mounts`` entry written as ``${auto_mount:...}`` (or its resolved ``auto_mount:...``)."""
    return isinstance(entry, str) and _ENTRY.match(entry) is not None


def parse_entry(entry: str) -> GitMount:
    """The :class:`GitMount` of a ``mounts`` entry ``${auto_mount:git+URL@REF,/target}``."""
    m = _ENTRY.match(entry)
    if m is None:
        raise ConfigError(f"{entry!r} is not an auto_mount entry",
                          hint="write ${auto_mount:git+URL@REF,/target/in/container}")
    body = m.group("a") if m.group("a") is not None else m.group("b")
    spec, sep, target = body.partition(",")
    return parse_spec(spec.strip(), target.strip() if sep else None)


def parse_spec(spec: str, target: str | None) -> GitMount:
    """``git+URL[@REF]`` and the container path into a :class:`GitMount` (one-line errors).

    The ref follows the last ``@`` of the URL's path, so ``git+ssh://git@host/org/r.git@feature/x``
    is ``ssh://git@host/org/r.git`` at ``feature/x``. Without a ref: the remote's default branch.
    """
    hint = "write ${auto_mount:git+URL@REF,/target/in/container}"
    if not spec.startswith("git+"):
        raise ConfigError(f"auto_mount {spec!r} must start with git+ (a git URL)", hint=hint)
    url = spec[len("git+"):]
    scheme_end = url.find("://")
    path_start = url.find("/", scheme_end + 3) if scheme_end >= 0 else url.find(":") + 1
    at = url.rfind("@")
    ref = DEFAULT_REF
    if path_start > 0 and at > path_start:
        url, ref = url[:at], url[at + 1:]
    if not url or not _URL.match(url) or url.startswith("-"):
        raise ConfigError(f"auto_mount URL {url!r} is not a git URL", hint=hint)
    if not _REF.match(ref) or ".." in ref:
        raise ConfigError(f"auto_mount ref {ref!r} is not a branch, tag or commit name", hint=hint)
    if not target:
        raise ConfigError(f"auto_mount {spec!r} names no place in the container", hint=hint)
    if not _TARGET.match(target) or ".." in target.split("/"):
        raise ConfigError(f"auto_mount target {target!r} must be an absolute path (letters, digits, ._+-/)",
                          hint=hint)
    name = re.sub(r"[^A-Za-z0-9._-]", "_", posixpath.basename(url.rstrip("/")).removesuffix(".git")) or "repo"
    return GitMount(url=url, ref=ref, target=target, name=name)


def from_values(entries: Iterable[Mapping[str, str]] | None) -> list[GitMount]:
    """The :class:`GitMount` list a profile's ``git_mounts`` holds (see env.reference)."""
    return [GitMount(url=e["url"], ref=e["ref"], target=e["target"], name=e["name"]) for e in entries or ()]


def default_git_dir(job_dir: str) -> str:
    """``<job dir on the cluster>/git-cache`` (the reference's place)."""
    return posixpath.join(job_dir, "git-cache")


# --------------------------------------------------------------------------- the reference's API

_REGISTRY: dict[str, dict[str, str]] = {}


def resolver(spec: str, target: str | None = None) -> str:
    """OmegaConf ``auto_mount`` resolver: checks the entry, registers it (:func:`get_git_mounts`)
    and returns it as ``auto_mount:SPEC,TARGET``, which ``mounts`` handling recognises."""
    mount = parse_spec(str(spec), None if target is None else str(target))
    _REGISTRY[mount.name] = {"url": mount.url, "ref": mount.ref, "target": mount.target}
    return f"auto_mount:{spec},{target}"


def get_git_mounts() -> dict[str, dict[str, str]]:
    """The repositories ``${auto_mount:...}`` resolutions registered in this process, by name."""
    return {k: dict(v) for k, v in _REGISTRY.items()}


def clear_git_mounts() -> None:
    """Forget what :func:`get_git_mounts` holds."""
    _REGISTRY.clear()


def clone_git_repos_via_tunnel(tunnel: Any, remote_job_dir: str, mounts: Iterable[GitMount] | None = None, *,
                               git_dir: str | None = None) -> list[str]:
    """Clone or update the registered repositories on the cluster through ``tunnel`` (a
    nemo-run tunnel, connected) and return their container mounts (``path:target``).

    ``mounts`` defaults to what ``${auto_mount:...}`` resolutions registered
    (:func:`get_git_mounts`); the cache is ``git_dir``, else ``<remote_job_dir>/git-cache``.
    """
    if mounts is None:
        mounts = [GitMount(url=v["url"], ref=v["ref"], target=v["target"], name=k) for k, v in _REGISTRY.items()]

    def run(cmd: str) -> tuple[int, str, str]:  # as execution.tunnels.run_via does (which is above env/)
        r = tunnel.run(cmd, hide=True, warn=True)
        return r.return_code, r.stdout, r.stderr

    return [f"{path}:{m.target}" for m, path, _ in sync(run, list(mounts), git_dir or default_git_dir(remote_job_dir))]


# --------------------------------------------------------------------------- cloning


def sync_script(mount: GitMount, git_dir: str) -> str:
    """The shell script that makes ``<git_dir>/<name>/<commit>`` for ``mount`` and prints the commit."""
    q = shlex.quote
    mirror = posixpath.join(git_dir, f"{mount.name}.git")
    trees = posixpath.join(git_dir, mount.name)
    lock = posixpath.join(git_dir, f"{mount.name}.lock")
    full_commit = re.fullmatch(r"[0-9a-f]{40}", mount.ref) is not None
    fetch = (f"git --git-dir={q(mirror)} cat-file -e {q(mount.ref + '^{commit}')} 2>/dev/null || "
             if full_commit else "")
    return "\n".join([
        "set -eu",
        f"mkdir -p {q(trees)}",
        f"exec 9>{q(lock)}",
        "flock 9",
        f"if [ ! -d {q(mirror)} ]; then",
        f"  git clone --quiet --mirror -- {q(mount.url)} {q(mirror)}",
        "else",
        f"  {fetch}git --git-dir={q(mirror)} fetch --quiet --prune --force origin",
        "fi",
        f"commit=$(git --git-dir={q(mirror)} rev-parse --verify --quiet {q(mount.ref + '^{commit}')}) || "
        f"{{ echo {q(f'no ref {mount.ref} in {mount.url}')} >&2; exit 3; }}",
        f'if [ ! -d {q(trees)}/"$commit" ]; then',
        f'  tmp={q(trees)}/".tmp-$commit-$$"',
        '  rm -rf "$tmp" && mkdir "$tmp"',
        f'  git --git-dir={q(mirror)} archive "$commit" | tar -x -C "$tmp"',
        f'  mv "$tmp" {q(trees)}/"$commit"',
        "fi",
        'echo "$commit"',
    ])


def sync(run: Callable[[str], tuple[int, str, str]], mounts: list[GitMount],
         git_dir: str) -> list[tuple[GitMount, str, str]]:
    """Clone or update each of ``mounts`` where ``run`` runs commands (the cluster);
    ``(mount, path of its commit's tree, commit)`` each. A failure is one line naming the repository."""
    out = []
    for mount in mounts:
        rc, stdout, stderr = run("bash -c " + shlex.quote(sync_script(mount, git_dir)))
        commit = stdout.strip().splitlines()[-1] if stdout.strip() else ""
        if rc != 0 or not re.fullmatch(r"[0-9a-f]{40}", commit):
            why = " ".join((stderr or stdout).split())[-300:] or f"exit status {rc}"
            raise ExecutionError(f"auto_mount: could not get {mount.url}@{mount.ref} on the cluster: {why}",
                                 hint=f"check the URL and ref, and that the cluster can reach it; cache: {git_dir}")
        out.append((mount, posixpath.join(git_dir, mount.name, commit), commit))
    return out
