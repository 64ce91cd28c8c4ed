"""mkdocs hook (mkdocs.yml ``hooks:``): the API reference must cover the public API.

Under ``mkdocs build --strict`` every warning fails the build; this hook warns

- for each public module of ``nemo_runspec`` (no path part starting with ``_``;
  the flat names that are ``sys.modules`` aliases of a subpackage module are not
  modules of their own) that no ``::: name`` directive of ``docs/api/*.md``
  documents (itself, or a package above it other than the root, whose directive
  shows its submodules);
- for each public function, class, method and property of those modules without a
  docstring, and each name a module exports in ``__all__`` from a private module
  (``nemo_runspec.parse``, defined in ``_parser``) whose definition has none (read
  with griffe, the library mkdocstrings-python reads them with). Public constants
  and attributes are not required to have one.

mkdocs itself fails on broken links and anchors and on pages left out of ``nav``
(``validation:`` in mkdocs.yml). docs/dev/docs-site.md describes all of it.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import Any

log = logging.getLogger("mkdocs.hooks.api_coverage")
ROOT_PACKAGE = "nemo_runspec"
_DIRECTIVE = re.compile(r"^::: ([\w.]+)\s*$", re.M)


def public_modules(src: Path) -> list[str]:
    """Dotted names of the public modules under ``src/nemo_runspec`` (aliases left out)."""
    out = []
    for path in sorted((src / ROOT_PACKAGE).rglob("*.py")):
        parts = path.relative_to(src).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        if any(p.startswith("_") for p in parts):
            continue
        if "sys.modules[__name__] =" in path.read_text(encoding="utf-8"):
            continue  # the reference's flat name of a subpackage module: documented there
        out.append(".".join(parts))
    return out


def documented(api_dir: Path) -> set[str]:
    """The identifiers of every ``::: name`` directive in the API pages."""
    return {m for page in api_dir.glob("*.md") for m in _DIRECTIVE.findall(page.read_text(encoding="utf-8"))}


def covered(module: str, directives: set[str]) -> bool:
    """True when ``module`` or a package above it (the root excepted) has a directive."""
    parts = module.split(".")
    names = {".".join(parts[:i]) for i in range(2, len(parts) + 1)} | {module}
    return bool(names & directives)


def _is_public_api(member: Any) -> bool:
    """A function, class or property (what must have a docstring), not an alias."""
    return not member.is_alias and not member.name.startswith("_") and (
        member.is_function or member.is_class or "property" in member.labels)


def _kind(member: Any) -> str:
    if "property" in member.labels:
        return "property"
    return "method" if member.is_function and member.parent.is_class else member.kind.value


def _exports(module: Any) -> list[tuple[str, Any]]:
    """``(name, target)`` of each name in ``__all__`` imported from elsewhere (``parse`` from ``_parser``)."""
    import griffe

    out = []
    for export in module.exports or ():
        name = export if isinstance(export, str) else export.name
        member = module.members.get(name)
        if member is None or not member.is_alias:
            continue
        try:
            target = member.final_target
        except (griffe.AliasResolutionError, griffe.CyclicAliasError):
            continue  # a name from outside the package: not ours to document
        if target.is_function or target.is_class:
            out.append((name, target))
    return out


def undocumented(src: Path, modules: list[str]) -> list[str]:
    """``kind path`` of every public function, class, method and property of ``modules``, and of
    every name a module exports in ``__all__`` from a private one, that has no docstring."""
    import griffe

    package = griffe.load(ROOT_PACKAGE, search_paths=[str(src)], resolve_aliases=False)
    missing = []
    for name in modules:
        module = package if name == ROOT_PACKAGE else package[name.split(".", 1)[1]]
        if not module.docstring:
            missing.append(f"module {name}")
        for member in module.members.values():
            if not _is_public_api(member):
                continue
            if not member.docstring:
                missing.append(f"{_kind(member)} {member.path}")
            if member.is_class:
                missing.extend(f"{_kind(m)} {m.path}" for m in member.members.values()
                               if _is_public_api(m) and not m.is_class and not m.docstring)
        missing.extend(f"export {name}.{export} ({target.path})" for export, target in _exports(module)
                       if not target.docstring)
    return missing


def on_pre_build(config: Any, **_: Any) -> None:
    """Warn (which ``--strict`` makes fatal) for each gap in the API reference."""
    root = Path(config["config_file_path"]).parent
    src, api = root / "src", Path(config["docs_dir"]) / "api"
    modules = public_modules(src)
    directives = documented(api)
    for name in modules:
        if not covered(name, directives):
            log.warning("API reference: public module %s is on no page of %s (add a '::: %s' directive)",
                        name, api, name)
    for item in undocumented(src, modules):
        log.warning("API reference: public %s has no docstring", item)
