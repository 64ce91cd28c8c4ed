"""The ``self_contained`` packager: just the recipe script and its config.

The archive holds ``main.py`` (the script, byte for byte) and, when given,
``config.yaml`` (the resolved train config). Nothing else travels, so this only
works for scripts that import the standard library and installed third-party
packages. :func:`project_imports` finds imports of the project's own code
(top-level packages of the repo or its ``src/``, sibling modules of the script,
relative imports); packaging such a script is refused with a hint to use
``packager = "code"``.
"""

from __future__ import annotations

import ast
import time
from dataclasses import dataclass
from pathlib import Path

from nemo_runspec.errors import PackagingError
from nemo_runspec.packaging._archive import DeterministicTar
from nemo_runspec.packaging.manifest import PackagingPlan

#: Top-level ``.py`` files of a repo that are never imported by recipes.
_NOT_MODULES = {"setup", "conftest", "noxfile", "tasks", "manage"}


@dataclass(frozen=True)
class ProjectImport:
    """An import of project code found in a script."""

    module: str
    line: int
    origin: str  # where the module lives, e.g. "src/nemotron" or "sibling helpers.py"


def project_modules(script: Path, repo_root: Path | None) -> dict[str, str]:
    """Top-level module names that belong to the project, mapped to where they live."""
    names: dict[str, str] = {}
    roots = []
    if repo_root is not None:
        roots += [repo_root, repo_root / "src"]
    for base in roots:
        if not base.is_dir():
            continue
        for child in base.iterdir():
            if child.is_dir() and (child / "__init__.py").exists():
                names.setdefault(child.name, str(child.relative_to(repo_root)))
            elif child.suffix == ".py" and child.stem not in _NOT_MODULES and child.is_file():
                names.setdefault(child.stem, str(child.relative_to(repo_root)))
    here = script.parent
    for child in here.iterdir():
        if child.resolve() == script.resolve():
            continue
        if child.suffix == ".py" and child.is_file():
            names.setdefault(child.stem, f"sibling {child.name}")
        elif child.is_dir() and (child / "__init__.py").exists():
            names.setdefault(child.name, f"sibling package {child.name}/")
    return names


def project_imports(script: str | Path, repo_root: str | Path | None = None) -> list[ProjectImport]:
    """Imports in ``script`` that need project code (sorted by line).

    Every ``import``/``from ... import`` anywhere in the file counts, including
    those inside functions: the cluster will run them. An import the script
    declares optional, inside a ``try`` whose handler catches ``ImportError`` or
    ``ModuleNotFoundError`` (``kit preflight``'s compatibility table), does not:
    the script runs without it, so it can still ship alone.
    """
    script = Path(script).resolve()
    root = Path(repo_root).resolve() if repo_root is not None else None
    try:
        tree = ast.parse(script.read_bytes(), filename=str(script))
    except SyntaxError as e:
        raise PackagingError(f"cannot parse the recipe script: {e.msg}", path=script, line=e.lineno) from e
    local = project_modules(script, root)
    optional = _optional_imports(tree)
    found: list[ProjectImport] = []
    for node in ast.walk(tree):
        if id(node) in optional:
            continue
        if isinstance(node, ast.Import):
            for alias in node.names:
                top = alias.name.split(".")[0]
                if top in local:
                    found.append(ProjectImport(alias.name, node.lineno, local[top]))
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                found.append(ProjectImport("." * node.level + (node.module or ""), node.lineno, "relative import"))
            elif node.module and node.module.split(".")[0] in local:
                found.append(ProjectImport(node.module, node.lineno, local[node.module.split(".")[0]]))
    return sorted(found, key=lambda i: i.line)


def _optional_imports(tree: ast.AST) -> set[int]:
    """``id()`` of the import statements directly in the body of a ``try`` that catches
    ``ImportError`` or ``ModuleNotFoundError`` (the script copes without them)."""
    optional: set[int] = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.Try):
            continue
        caught = set()
        for handler in node.handlers:
            names = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
            caught.update(n.id for n in names if isinstance(n, ast.Name))
        if caught & {"ImportError", "ModuleNotFoundError"}:
            optional.update(id(stmt) for stmt in node.body if isinstance(stmt, ast.Import | ast.ImportFrom))
    return optional


def package_self_contained(
    script_path: str | Path,
    out_path: str | Path,
    *,
    config_path: str | Path | None = None,
    repo_root: str | Path | None = None,
) -> PackagingPlan:
    """Write ``main.py`` (+ ``config.yaml``) to ``out_path``; refuse scripts importing project code."""
    t0 = time.perf_counter()
    script = Path(script_path).resolve()
    if not script.is_file():
        raise PackagingError("recipe script not found", path=script, key="packager")
    imports = project_imports(script, repo_root)
    if imports:
        first = imports[0]
        more = f" (and {len(imports) - 1} more)" if len(imports) > 1 else ""
        raise PackagingError(
            f"the script imports project code '{first.module}' ({first.origin}){more}, "
            "which the self_contained packager does not ship",
            path=script,
            line=first.line,
            key="packager",
            hint='use packager = "code" to ship the working tree',
        )
    out_path = Path(out_path)
    with DeterministicTar(out_path) as tar:
        tar.add_bytes("main.py", script.read_bytes(), mode=0o755)
        if config_path is not None:
            cfg = Path(config_path)
            if not cfg.is_file():
                raise PackagingError("train config to package not found", path=cfg, key="packager")
            tar.add_bytes("config.yaml", cfg.read_bytes())
    plan = PackagingPlan(
        kind="self_contained", script="main.py", files=tar.entries, file_count=len(tar.entries),
        archive_path=str(out_path), archive_sha256=tar.sha256, archive_size=tar.size,
    )
    if repo_root is not None:
        _add_git_provenance(plan, Path(repo_root), script)
    plan.seconds = round(time.perf_counter() - t0, 4)
    return plan


def _add_git_provenance(plan: PackagingPlan, root: Path, script: Path) -> None:
    """Commit and dirty flag of the script itself (when it lives in a git repo)."""
    from nemo_runspec.packaging.git import find_repo_root, git_status

    top = find_repo_root(root)
    if top is None:
        return
    plan.repo_root = str(top)
    rel = str(script.relative_to(top)) if script.is_relative_to(top) else None
    status = git_status(top, rel)
    plan.commit = status.head
    plan.branch = status.branch
    plan.dirty = bool(status.entries)


