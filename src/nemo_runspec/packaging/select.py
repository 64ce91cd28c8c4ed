"""Choose and build the packager for a job from its env.toml profile.

Profile keys read here::

    packager                 = "git" | "code" | "self_contained" | "pattern" | "hybrid" | "none"
    packager_include_pattern = "src/**/*.py" or [...]        # pattern
    packager_relative_path   = "."                           # pattern: base of patterns (repo-relative)
    packager_subpath         = "src"                         # git/code: archive root
    packager_include_pattern = "build/*.json"                # git: also ship these uncommitted files
    check_uncommitted        = true                          # git: refuse dirty packaged paths
    include_submodules       = true                          # git: submodules at their recorded commits
    packagers = { code = {packager="git", subpath="src"}, cfg = {packager="pattern", include_pattern=["conf/*.yaml"]} }
    workdir                  = "/opt/project"                # none: where the code already is

Without ``packager`` the default depends on the recipe (see
:func:`default_packager_kind`). With it, a key the named packager does not read
is an error (:mod:`nemo_runspec.env.packager_keys`), not ignored.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nemo_runspec._suggest import did_you_mean
from nemo_runspec.env.packager_keys import PACKAGERS, SUB_PACKAGERS
from nemo_runspec.errors import PackagingError
from nemo_runspec.packaging.manifest import PackagingPlan
from nemo_runspec.packaging.progress import ProgressCallback

if TYPE_CHECKING:
    from nemo_runspec.spec.models import Runspec

#: the packager names (declared once: nemo_runspec.env.packager_keys)
KINDS = PACKAGERS
SUB_KINDS = SUB_PACKAGERS
SUB_KEYS = ("packager", "subpath", "include_pattern", "relative_path", "check_uncommitted", "include_submodules")


def _where(sources: Mapping[str, Any] | None, key: str) -> dict[str, Any]:
    src = (sources or {}).get(key)
    if src is None:
        return {"key": key}
    return {"key": key, "path": getattr(src, "path", None), "line": getattr(src, "line", None)}


def default_packager_kind(runspec: Runspec | None, script_path: str | Path, repo_root: str | Path | None) -> tuple[str, str]:
    """(kind, reason) of the packager used when the profile names none.

    * ``launch = "ray"`` or a custom ``run.cmd`` -> ``code``: Ray workers and
      custom commands use project files we cannot enumerate.
    * a script that imports project code (the repo's own packages, sibling
      modules, relative imports) -> ``code``: the working tree as git sees it,
      so uncommitted edits run exactly as tested locally (the diff is recorded).
    * otherwise -> ``self_contained``: the script and its config, nothing else:
      tiny, fast, and immune to unrelated dirty files.
    """
    from nemo_runspec.packaging.self_contained import project_imports

    run = runspec.run if runspec is not None else None
    if repo_root is not None and run is not None:
        if run.launch == "ray":
            return "code", 'default for launch = "ray": workers import project code from the shipped tree'
        if run.cmd:
            return "code", "default for a custom run.cmd: it may use any project file"
    imports = project_imports(script_path, repo_root)
    if imports and repo_root is not None:
        first = imports[0]
        return "code", f"default: the script imports project code ({first.module}, line {first.line})"
    if imports:
        return "pattern", "default outside a git repository for a script with local imports"
    return "self_contained", "default: the script imports only stdlib/third-party modules"


def _bool(values: Mapping[str, Any], key: str, default: bool, sources) -> bool:
    v = values.get(key)
    if v is None:
        return default
    if not isinstance(v, bool):
        raise PackagingError(f"{key} must be true or false, got {v!r}", **_where(sources, key))
    return v


def _str(values: Mapping[str, Any], key: str, sources) -> str:
    v = values.get(key)
    if v is None:
        return ""
    if not isinstance(v, str):
        raise PackagingError(f"{key} must be a string, got {v!r}", **_where(sources, key))
    return v


def build_packager(
    profile_values: Mapping[str, Any],
    *,
    runspec: Runspec | None = None,
    repo_root: str | Path | None = None,
    script_path: str | Path | None = None,
    config_path: str | Path | None = None,
    sources: Mapping[str, Any] | None = None,
    progress: ProgressCallback | None = None,
    use_cache: bool = True,
    cache_dir: str | Path | None = None,
) -> tuple[Any, PackagingPlan]:
    """Build the nemo-run packager named by the profile and its :class:`PackagingPlan`.

    :func:`nemo_runspec.job.packager.packager_for` does it for a compiled job (its run
    environment and runspec, error locations from its profile, the ``[cache]`` dir of its
    env.toml and progress on the console).

    The plan is filled in (commit, diff, files, archive sha256, ...) when
    nemo-run calls ``packager.package(...)``; it is the same object every time,
    even across nemo-run's executor clones. ``sources`` maps profile keys to
    objects with ``.path``/``.line`` for error locations; ``config_path`` is the
    train config shipped by ``self_contained``; ``progress`` receives
    :class:`~nemo_runspec.packaging.progress.ProgressEvent`\\ s.
    """
    from nemo_runspec.packaging import _registry
    from nemo_runspec.packaging.git import _script_in_archive, find_repo_root

    if script_path is None:
        if runspec is None:
            raise PackagingError("build_packager needs the recipe script: pass script_path= or runspec=")
        script_path = runspec.script_path
    script = Path(script_path).resolve()
    kind = profile_values.get("packager")
    unreadable: PackagingError | None = None
    if repo_root is not None:
        root: Path | None = Path(repo_root).resolve()
    else:
        try:  # git missing or refusing the repository: one line, never a guess that it is no repository
            root = find_repo_root(script)
        except PackagingError as exc:
            if kind not in ("none", "self_contained"):
                raise
            root, unreadable = None, exc  # named in the profile: nothing, or the script alone, as asked
    if kind is None:
        kind, reason = default_packager_kind(runspec, script, root)
        from nemo_runspec.env.packager_keys import PROFILE_KEY_USERS, unused_keys, unused_message

        for key in unused_keys(kind, {k: profile_values.get(k) for k in PROFILE_KEY_USERS}):
            raise PackagingError(unused_message(key, profile_values.get(key), kind, default_reason=reason),
                                 **_where(sources, key))
    else:
        reason = "profile key packager"
        src = (sources or {}).get("packager")
        if src is not None:
            reason += f" ({src})"
        if kind not in KINDS:
            raise PackagingError(
                f"unknown packager {kind!r}", hint=did_you_mean(str(kind), KINDS, listing=True),
                **_where(sources, "packager"),
            )
        from nemo_runspec.env.packager_keys import PROFILE_KEY_USERS, unused_keys, unused_message

        for key in unused_keys(kind, {k: profile_values.get(k) for k in PROFILE_KEY_USERS}):
            raise PackagingError(unused_message(key, profile_values.get(key), kind), **_where(sources, key))
    cache = str(cache_dir) if cache_dir else ""
    from nemo_runspec.packaging import (
        _nemo_run as nr,  # imports nemo_run: only once the input is valid
    )
    plan = PackagingPlan(kind=kind, reason=reason, repo_root=str(root) if root else None)
    if unreadable is not None:
        said = (f"packager = {kind!r} as the profile asks, without the repository's commit in packaging.json: "
                f"{unreadable.problem}")
        plan.warnings.append(said)
        print(f"warning: {said}", file=sys.stderr)

    def need_root(what: str) -> Path:
        if root is None:
            raise PackagingError(
                f'packager = "{what}" needs a git repository, but {script} is not inside one',
                hint='use packager = "self_contained" or "pattern"', **_where(sources, "packager"),
            )
        return root

    if kind == "none":
        workdir = (runspec.run.workdir if runspec is not None else None) or profile_values.get("workdir")
        if not workdir:
            # no default: only the user knows where the code is on the cluster or in the image
            raise PackagingError(
                'packager = "none" ships no code, so the job needs a working directory that already holds it',
                hint='the reference\'s example needs this one more key: executor = "slurm", packager = "none", '
                     'workdir = "/lustre/you/project", the directory holding the code on the cluster or in the '
                     "image; or set run.workdir in the script's [tool.runspec]",
                **_where(sources, "packager"),
            )
        plan.workdir = str(workdir)
        plan.script = None
        return nr.passthrough_packager(), plan

    if kind == "hybrid":
        subs_cfg = profile_values.get("packagers")
        if not isinstance(subs_cfg, Mapping) or not subs_cfg:
            raise PackagingError(
                'packager = "hybrid" needs a [<profile>.packagers] table of named sub-packagers',
                hint='e.g. packagers = { code = { packager = "git", subpath = "src" } }',
                **_where(sources, "packagers"),
            )
        subs = {}
        for name, cfg in subs_cfg.items():
            if hasattr(cfg, "model_dump"):
                cfg = {k: v for k, v in cfg.model_dump().items() if v is not None}
            if not isinstance(cfg, Mapping):
                raise PackagingError(f"packagers.{name} must be a table", **_where(sources, "packagers"))
            for k in cfg:
                if k not in SUB_KEYS:
                    raise PackagingError(
                        f"unknown key packagers.{name}.{k}", hint=did_you_mean(k, SUB_KEYS),
                        **_where(sources, "packagers"),
                    )
            from nemo_runspec.env.packager_keys import unused_keys, unused_message

            for k in unused_keys(str(cfg.get("packager")), {k: v for k, v in cfg.items() if k != "packager"},
                                 sub=True):
                raise PackagingError(f"packagers.{name}: " + unused_message(k, cfg[k], str(cfg.get("packager")),
                                                                             sub=True),
                                     **_where(sources, "packagers"))
            sub_kind = cfg.get("packager")
            if sub_kind not in SUB_KINDS:
                raise PackagingError(
                    f"packagers.{name}.packager must be one of {', '.join(SUB_KINDS)}, got {sub_kind!r}",
                    hint=did_you_mean(str(sub_kind), SUB_KINDS), **_where(sources, "packagers"),
                )
            flat = {
                "packager": sub_kind,
                "packager_subpath": cfg.get("subpath"),
                "packager_include_pattern": cfg.get("include_pattern"),
                "packager_relative_path": cfg.get("relative_path"),
            }
            if sub_kind == "git":  # the profile's values are the parts' defaults
                flat["check_uncommitted"] = cfg.get("check_uncommitted", profile_values.get("check_uncommitted", True))
                flat["include_submodules"] = cfg.get("include_submodules",
                                                     profile_values.get("include_submodules", True))
            sub_packager, sub_plan = build_packager(
                {k: v for k, v in flat.items() if v is not None}, runspec=runspec, repo_root=root,
                script_path=script, config_path=config_path, sources=sources, progress=progress,
                use_cache=use_cache, cache_dir=cache_dir,
            )
            subs[str(name)] = sub_packager
            plan.parts[str(name)] = sub_plan
            if sub_plan.script and plan.script is None:
                plan.script = f"{name}/{sub_plan.script}"
        pid = _registry.register(plan, progress)
        return nr.RunspecHybridPackager(sub_packagers=subs, plan_id=pid), plan

    if kind == "self_contained":
        plan.script = "main.py"
        pid = _registry.register(plan, progress)
        return nr.SelfContainedPackager(
            script_path=str(script), config_path=str(config_path or ""),
            repo_root=str(root or ""), plan_id=pid,
        ), plan

    if kind == "pattern":
        from nemo_runspec.packaging.pattern import as_pattern_list, match_patterns

        patterns = as_pattern_list(profile_values.get("packager_include_pattern"))
        if not patterns:
            raise PackagingError(
                'packager = "pattern" needs packager_include_pattern',
                hint='e.g. packager_include_pattern = ["src/**/*.py"]',
                **_where(sources, "packager_include_pattern"),
            )
        rel = _str(profile_values, "packager_relative_path", sources)
        anchor = root if root is not None else script.parent
        base = (anchor / rel).resolve() if rel else anchor
        if not base.is_dir():
            raise PackagingError(
                f"packager_relative_path {rel!r} is not a directory ({base})",
                **_where(sources, "packager_relative_path"),
            )
        try:
            match_patterns(patterns, base)  # fail now, not after the job is built
        except PackagingError as e:
            raise PackagingError(e.problem, hint=e.hint, **_where(sources, "packager_include_pattern")) from None
        plan.repo_root = str(base)
        try:
            plan.script = _script_in_archive(base, "", script)
        except PackagingError:
            plan.script = None
        pid = _registry.register(plan, progress)
        return nr.RunspecPatternPackager(
            include_pattern=patterns,
            relative_path=str(base), script_path=str(script), use_cache=use_cache,
            cache_dir=cache, plan_id=pid,
        ), plan

    # git / code
    repo = need_root(kind)
    subpath = _str(profile_values, "packager_subpath", sources).strip("/")
    if subpath and not (repo / subpath).is_dir():
        raise PackagingError(
            f"packager_subpath {subpath!r} is not a directory in {repo}",
            **_where(sources, "packager_subpath"),
        )
    try:
        plan.script = _script_in_archive(repo, subpath, script)
    except PackagingError as e:
        raise PackagingError(e.problem, hint=e.hint, **_where(sources, "packager_subpath")) from None
    plan.subpath = subpath or None
    pid = _registry.register(plan, progress)
    if kind == "git":
        from nemo_runspec.packaging.pattern import as_pattern_list, match_patterns

        extra = as_pattern_list(profile_values.get("packager_include_pattern"))
        try:
            match_patterns(extra, repo / subpath if subpath else repo)  # fail now, not at submission
        except PackagingError as e:
            raise PackagingError(e.problem, hint=e.hint, **_where(sources, "packager_include_pattern")) from None
        return nr.RunspecGitPackager(
            repo_root=str(repo), subpath=subpath,
            check_uncommitted=_bool(profile_values, "check_uncommitted", True, sources),
            include_submodules=_bool(profile_values, "include_submodules", True, sources),
            include_pattern=extra,
            script_path=str(script), use_cache=use_cache, cache_dir=cache, plan_id=pid,
        ), plan
    return nr.CodePackager(
        repo_root=str(repo), subpath=subpath, script_path=str(script),
        use_cache=use_cache, cache_dir=cache, plan_id=pid,
    ), plan
