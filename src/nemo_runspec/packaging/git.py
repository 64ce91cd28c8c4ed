"""Git helpers and the ``git`` packager: committed files via ``git archive``.

Unlike nemo-run's ``GitArchivePackager`` every git command runs with ``cwd`` =
the repository that contains the recipe script (never the process cwd), and
uncommitted changes to packaged paths are refused (or loudly warned about with
``check_uncommitted=false``) instead of being silently left out.
"""

from __future__ import annotations

import logging
import os
import stat
import subprocess
import tarfile
import time
from dataclasses import dataclass
from pathlib import Path

from nemo_runspec.errors import PackagingError
from nemo_runspec.packaging import cache as _cache
from nemo_runspec.packaging._archive import DeterministicTar, Ticker
from nemo_runspec.packaging.git_cli import find_repo_root, run_git  # noqa: F401 - the names callers import from here
from nemo_runspec.packaging.git_index import private_index
from nemo_runspec.packaging.manifest import PackagingPlan
from nemo_runspec.packaging.progress import ProgressCallback

logger = logging.getLogger(__name__)

#: How many changed paths an error message lists before "and N more".
SHOW_PATHS = 5


@dataclass(frozen=True)
class StatusEntry:
    """One line of ``git status --porcelain=v2``."""

    kind: str  # "1" changed, "2" renamed/copied, "u" unmerged, "?" untracked
    xy: str  # index/worktree status letters ("??" for untracked)
    path: str
    submodule: str = "N..."
    orig_path: str | None = None

    @property
    def is_untracked(self) -> bool:
        """True for a file git does not track (``?`` in porcelain v2)."""
        return self.kind == "?"

    @property
    def is_submodule(self) -> bool:
        """True when the entry is a submodule (its submodule field starts with ``S``)."""
        return self.submodule.startswith("S")


@dataclass(frozen=True)
class Status:
    """Parsed ``git status --porcelain=v2 --branch -z`` output (plus the raw bytes)."""

    head: str | None
    branch: str | None
    entries: tuple[StatusEntry, ...]
    raw: bytes

    @property
    def changed(self) -> list[StatusEntry]:
        """Tracked paths that differ from HEAD (staged, unstaged, deleted, renamed, conflicted)."""
        return [e for e in self.entries if not e.is_untracked]

    @property
    def untracked(self) -> list[str]:
        """Untracked, not ignored paths."""
        return [e.path for e in self.entries if e.is_untracked]


#: ``git status`` arguments. ``--untracked-files=normal`` (not ``all``) because
#: on a 30,000-file tree ``all`` costs ~15 ms more even with nothing untracked;
#: the (rare) collapsed untracked directories are expanded by
#: :func:`_expand_untracked_dirs`. ``--no-ahead-behind``: counting commits
#: against the upstream can be slow and is never used here.
STATUS_ARGS = (
    "status", "--porcelain=v2", "--branch", "--no-ahead-behind", "-z",
    "--untracked-files=normal", "--ignore-submodules=none",
)


def git_status(root: Path, pathspec: str | None = None, *, index_dir: Path | None = None) -> Status:
    """Status of the work tree (optionally limited to ``pathspec``), untracked files listed one by one.

    ``raw`` is the output of ``git status`` itself, where an untracked
    directory appears once as ``dir/``; ``entries`` list its files. With
    ``index_dir``, git works on a private copy of the index kept there, with
    its untracked cache on (:func:`private_index`); the output is the same.
    """
    args = list(STATUS_ARGS)
    if pathspec:
        args += ["--", pathspec]
    env = None
    index = private_index(root, index_dir) if index_dir is not None else None
    if index is not None:
        _cache.clear_stale_git_lock(index)  # a killed git status must not keep this copy from being saved
        env = {**os.environ, "GIT_INDEX_FILE": str(index)}
        args = ["-c", "core.untrackedCache=true", "-c", "core.splitIndex=false", *args]
    raw = run_git(args, root, env=env)
    head = branch = None
    entries: list[StatusEntry] = []
    items = raw.split(b"\0")
    i = 0
    while i < len(items):
        item = items[i].decode("utf-8", "surrogateescape")
        i += 1
        if not item:
            continue
        if item.startswith("# branch.oid "):
            oid = item.split(" ", 2)[2]
            head = None if oid == "(initial)" else oid
        elif item.startswith("# branch.head "):
            b = item.split(" ", 2)[2]
            branch = None if b == "(detached)" else b
        elif item.startswith("1 "):
            f = item.split(" ", 8)
            entries.append(StatusEntry("1", f[1], f[8], f[2]))
        elif item.startswith("2 "):
            f = item.split(" ", 9)
            orig = items[i].decode("utf-8", "surrogateescape")
            i += 1
            entries.append(StatusEntry("2", f[1], f[9], f[2], orig))
        elif item.startswith("u "):
            f = item.split(" ", 10)
            entries.append(StatusEntry("u", f[1], f[10], f[2]))
        elif item.startswith("? "):
            entries.append(StatusEntry("?", "??", item[2:]))
    if any(e.is_untracked and e.path.endswith("/") for e in entries):
        entries = _expand_untracked_dirs(root, entries)
    return Status(head=head, branch=branch, entries=tuple(entries), raw=raw)


def _expand_untracked_dirs(root: Path, entries: list[StatusEntry]) -> list[StatusEntry]:
    """Replace each collapsed untracked ``dir/`` entry by the untracked files under it.

    Same result as ``--untracked-files=all`` (a nested repository stays ``dir/``).
    """
    dirs = [e.path for e in entries if e.is_untracked and e.path.endswith("/")]
    out = run_git(["--literal-pathspecs", "ls-files", "-z", "--others", "--exclude-standard", "--", *dirs], root)
    files = {r.decode("utf-8", "surrogateescape") for r in out.split(b"\0") if r}
    kept = [e for e in entries if not (e.is_untracked and e.path.endswith("/"))]
    kept += [StatusEntry("?", "??", f) for f in files]
    return [*[e for e in kept if not e.is_untracked], *sorted((e for e in kept if e.is_untracked), key=lambda e: e.path)]


def diff_summary(root: Path, pathspec: str | None = None) -> list[dict]:
    """``git diff HEAD --numstat`` as ``[{path, added, deleted}]`` (binary files: None counts)."""
    args = ["diff", "HEAD", "--numstat", "-z", "--no-renames"]
    if pathspec:
        args += ["--", pathspec]
    out = []
    for rec in run_git(args, root).split(b"\0"):
        if not rec:
            continue
        added, deleted, path = rec.decode("utf-8", "surrogateescape").split("\t", 2)
        out.append({
            "path": path,
            "added": None if added == "-" else int(added),
            "deleted": None if deleted == "-" else int(deleted),
        })
    return out


def write_diff(root: Path, dest: Path, pathspec: str | None = None) -> tuple[str, str] | None:
    """Write ``git diff HEAD --binary`` to ``dest``; returns (path, sha256), None when empty."""
    args = ["diff", "HEAD", "--binary", "--no-color"]
    if pathspec:
        args += ["--", pathspec]
    text = run_git(args, root)
    if not text:
        return None
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_bytes(text)
    import hashlib

    return str(dest), hashlib.sha256(text).hexdigest()


def describe_paths(paths: list[str], limit: int = SHOW_PATHS) -> str:
    """``a, b, c and 4 more``."""
    shown = ", ".join(paths[:limit])
    return shown + (f" and {len(paths) - limit} more" if len(paths) > limit else "")


def _norm_subpath(subpath: str | None) -> str:
    s = (subpath or "").strip().strip("/")
    return "" if s in ("", ".") else s


def _submodules(root: Path, commit: str, subpath: str) -> list[tuple[str, str]]:
    """(path, commit) of every submodule recorded in ``commit`` under ``subpath``."""
    if not (root / ".gitmodules").exists():
        return []
    args = ["ls-tree", "-r", "-z", commit]
    if subpath:
        args += ["--", subpath]
    subs = []
    for rec in run_git(args, root).split(b"\0"):
        if rec.startswith(b"160000 commit "):
            meta, path = rec.decode("utf-8", "surrogateescape").split("\t", 1)
            subs.append((path, meta.split()[2]))
    return subs


def package_git(
    repo_root: str | Path,
    out_path: str | Path,
    *,
    subpath: str | None = None,
    check_uncommitted: bool = True,
    include_submodules: bool = True,
    include_pattern: list[str] | None = None,
    script_path: str | Path | None = None,
    use_cache: bool = True,
    cache_dir: str | Path | None = None,
    progress: ProgressCallback | None = None,
) -> PackagingPlan:
    """Archive ``HEAD`` (committed files only) of ``repo_root`` to ``out_path`` (.tar.gz).

    ``subpath`` becomes the archive root (as in nemo-run). Raises
    :class:`PackagingError` when tracked files under ``subpath`` have
    uncommitted changes and ``check_uncommitted`` is true; otherwise such
    changes are warned about and their diff is saved next to the archive.

    ``include_pattern`` (globs relative to the archive root, as the reference's
    "additional uncommitted files") adds the matching files that ``HEAD`` does
    not hold as committed, from the working tree: untracked or ignored files,
    and tracked files with uncommitted edits (which are then shipped as they
    are, not refused). They are listed in ``plan.extra_files``. A pattern that
    matches nothing is an error. ``include_submodules`` adds each submodule at
    its recorded commit.
    """
    t0 = time.perf_counter()
    root = Path(repo_root).resolve()
    out_path = Path(out_path)
    sub = _norm_subpath(subpath)
    status = git_status(root, sub or None, index_dir=_cache.index_dir(cache_dir) if use_cache else None)
    commit = status.head
    if commit is None:
        raise PackagingError(
            "the git repository has no commits yet, so the git packager has nothing to archive",
            path=root,
            key="packager",
            hint='commit your code or use packager = "code"',
        )
    script_rel = None
    if script_path is not None:
        script_rel = _script_in_archive(root, sub, Path(script_path))
        rel_repo = os.path.relpath(Path(script_path).resolve(), root)
        if not run_git(["ls-tree", "--name-only", commit, "--", rel_repo], root).strip():
            raise PackagingError(
                f"recipe script {rel_repo} is not committed, so the git packager would not ship it",
                path=script_path,
                key="packager",
                hint='commit it or use packager = "code"',
            )

    changed = sorted({e.path for e in status.changed} | {e.orig_path for e in status.changed if e.orig_path})
    extra = _extra_files(root, commit, sub, include_pattern or [], changed)
    shipped = {(f"{sub}/{name}" if sub else name) for name in extra}
    changed = [p for p in changed if p not in shipped]
    untracked = [p for p in status.untracked if p not in shipped]
    warnings: list[str] = []
    if changed and check_uncommitted:
        where = f" under {sub}/" if sub else ""
        raise PackagingError(
            f"uncommitted changes to {len(changed)} packaged file(s){where}: {describe_paths(changed)}; "
            "the git packager ships only committed files",
            path=root,
            key="check_uncommitted",
            hint='commit or stash them, use packager = "code" to ship the working tree, '
            "or set check_uncommitted = false to ship the last commit anyway",
        )
    if changed:
        msg = (
            f"PACKAGING COMMIT {commit[:12]} WITHOUT {len(changed)} uncommitted change(s): "
            f"{describe_paths(changed)} (check_uncommitted = false)"
        )
        warnings.append(msg)
        logger.warning(msg)
    if untracked:
        msg = f"{len(untracked)} untracked file(s) are not packaged: {describe_paths(untracked)}"
        warnings.append(msg)
        logger.warning(msg)

    fp = _cache.fingerprint("git", commit, sub, str(include_submodules),
                            *(f"{name}\0{digest}" for name, (_, digest) in sorted(extra.items())))

    def build(target: Path) -> PackagingPlan:
        ticker = Ticker(progress, "packaging git archive")
        treeish = f"{commit}:{sub}" if sub else commit
        subs = _submodules(root, commit, sub) if include_submodules else []
        if subs or extra:
            sha, size, count = _archive_with_submodules(root, treeish, sub, subs, target, ticker, warnings,
                                                        extra={k: p for k, (p, _) in extra.items()})
        else:
            sha, size = _archive_fast(root, treeish, target, ticker)
            count = len([r for r in run_git(["ls-tree", "-r", "-z", "--name-only", treeish], root).split(b"\0") if r])
        ticker.finish()
        tree = run_git(["rev-parse", treeish if sub else f"{commit}^{{tree}}"], root).decode().strip()
        return PackagingPlan(
            kind="git", tree=tree, file_count=count, archive_sha256=sha, archive_size=size,
            warnings=[w for w in warnings if "submodule" in w],
        )

    plan = _cache.build_cached(fp, out_path, build, use_cache=use_cache, directory=cache_dir)
    plan.kind = "git"
    plan.repo_root = str(root)
    plan.subpath = sub or None
    plan.script = script_rel
    plan.commit = commit
    plan.branch = status.branch
    plan.dirty = bool(changed)
    plan.untracked = untracked
    plan.extra_files = [{"path": name, "sha256": digest, "source": str(path)}
                        for name, (path, digest) in sorted(extra.items())]
    plan.warnings = list(dict.fromkeys(plan.warnings + warnings))
    plan.diff_summary = diff_summary(root, sub or None) if changed else []
    plan.diff_path = plan.diff_sha256 = None
    if changed:
        res = write_diff(root, _cache.diff_path_for(out_path), sub or None)
        if res:
            plan.diff_path, plan.diff_sha256 = res
    plan.seconds = round(time.perf_counter() - t0, 4)
    return plan


def _extra_files(root: Path, commit: str, sub: str, patterns: list[str],
                 changed: list[str]) -> dict[str, tuple[Path, str]]:
    """Archive name -> (working-tree file, sha256) of each file ``patterns`` match that
    ``commit`` does not hold as committed (not in its tree, or changed since)."""
    if not patterns:
        return {}
    import hashlib

    from nemo_runspec.packaging.pattern import match_patterns

    base = root / sub if sub else root
    treeish = f"{commit}:{sub}" if sub else commit
    committed = {r.decode("utf-8", "surrogateescape")
                 for r in run_git(["ls-tree", "-r", "-z", "--name-only", treeish], root).split(b"\0") if r}
    changed_here = {p[len(sub) + 1:] if sub else p for p in changed if not sub or p.startswith(sub + "/")}
    out: dict[str, tuple[Path, str]] = {}
    for name, path in match_patterns(patterns, base):
        if name == ".git" or name.startswith(".git/") or "/.git/" in name:
            continue
        if name in committed and name not in changed_here:
            continue  # committed as it is: already in the archive
        st = path.lstat()
        if stat.S_ISDIR(st.st_mode):
            continue
        if not (stat.S_ISREG(st.st_mode) or stat.S_ISLNK(st.st_mode)):
            from nemo_runspec.packaging._archive import raise_not_regular

            raise_not_regular([(str(path), st.st_mode)])  # reading a FIFO would block forever
        if not path.is_file():  # a dangling symlink, or one to a directory
            continue
        out[name] = (path, hashlib.sha256(path.read_bytes()).hexdigest())
    return out


def _script_in_archive(root: Path, sub: str, script: Path) -> str:
    """The script's path inside an archive rooted at ``root/sub``; error when outside."""
    base = (root / sub) if sub else root
    rel = os.path.relpath(script.resolve(), base)
    if rel.startswith(".."):
        raise PackagingError(
            f"recipe script {script} is outside the packaged directory {base}",
            key="packager_subpath",
            hint="widen packager_subpath or remove it",
        )
    return rel.replace(os.sep, "/")


def _archive_fast(root: Path, treeish: str, target: Path, ticker: Ticker) -> tuple[str, int]:
    """``git archive --format=tar <treeish> | gzip -1 -n`` into ``target``; returns (sha256, size)."""
    import hashlib

    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    git = subprocess.Popen(["git", "archive", "--format=tar", treeish], cwd=root, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    gz = subprocess.Popen(["gzip", "-1", "-n", "-c"], stdin=git.stdout, stdout=subprocess.PIPE)
    assert git.stdout is not None and gz.stdout is not None
    git.stdout.close()
    h = hashlib.sha256()
    size = 0
    try:
        with open(tmp, "wb") as f:
            while chunk := gz.stdout.read(1 << 20):
                h.update(chunk)
                f.write(chunk)
                size += len(chunk)
                ticker.tick(nbytes=len(chunk))
        gz_rc = gz.wait()
        git_err = git.stderr.read().decode(errors="replace") if git.stderr else ""
        git_rc = git.wait()
        if git_rc != 0 or gz_rc != 0:
            raise PackagingError(f"git archive failed: {git_err.strip() or 'gzip exit ' + str(gz_rc)}", path=root)
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)
    return h.hexdigest(), size


def _archive_with_submodules(
    root: Path,
    treeish: str,
    sub: str,
    subs: list[tuple[str, str]],
    target: Path,
    ticker: Ticker,
    warnings: list[str],
    extra: dict[str, Path] | None = None,
) -> tuple[str, int, int]:
    """Main archive plus each submodule (at its recorded commit) merged into one tarball,
    then the ``extra`` working-tree files (archive name -> file), which replace a
    committed file of the same name."""
    extra = extra or {}
    with DeterministicTar(target, ticker=ticker) as tar:
        _copy_git_archive(root, treeish, "", tar, skip=set(extra))
        for name in sorted(extra):
            tar.add_path(name, extra[name])
        for path, sm_commit in subs:
            sm_dir = root / path
            prefix = os.path.relpath(path, sub) if sub else path
            if not (sm_dir / ".git").exists():
                warnings.append(f"submodule {path} is not checked out; not packaged (run git submodule update --init)")
                continue
            _copy_git_archive(sm_dir, sm_commit, prefix.replace(os.sep, "/") + "/", tar)
    return tar.sha256 or "", tar.size or 0, len(tar.entries)


def _copy_git_archive(cwd: Path, treeish: str, prefix: str, tar: DeterministicTar,
                      skip: set[str] | frozenset[str] = frozenset()) -> None:
    proc = subprocess.Popen(["git", "archive", "--format=tar", treeish], cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None
    with tarfile.open(fileobj=proc.stdout, mode="r|") as src:
        for info in src:
            if info.type in (tarfile.XGLTYPE, tarfile.XHDTYPE) or info.name in skip:
                continue
            fobj = src.extractfile(info) if info.isfile() else None
            tar.add_member(info, fobj, prefix + info.name)
    err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    if proc.wait() != 0:
        raise PackagingError(f"git archive failed in {cwd}: {err.strip()}", path=cwd)
