"""Read a Python library's API from its source with ``ast``: nothing is imported or executed.

Shared by the manifest scripts (``scripts/nemo_rl_api.py``, ``scripts/megatron_bridge_api.py``):
a :class:`Source` finds the definition of ``package.module.Name`` in a source tree (a git
ref or a work tree), following ``from X import Y [as Z]`` re-exports across modules and,
with :func:`routed`, across repositories (Megatron-Bridge's ``megatron.bridge`` and the
``megatron.core`` of the Megatron-LM commit it pins). :func:`describe` says what a caller
needs of a definition: a function's parameters, a class's constructor parameters or
dataclass fields (inherited ones included).
"""

from __future__ import annotations

import ast
import subprocess
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

Reader = Callable[[str], "str | None"]


def git_reader(git_dir: str, ref: str, *, prefix: str = "") -> Reader:
    """Read ``prefix + path`` at ``ref`` from a git dir (``None`` when absent)."""
    def read(path: str) -> str | None:
        r = subprocess.run(["git", "--git-dir", git_dir, "show", f"{ref}:{prefix}{path}"],
                           capture_output=True, text=True)
        return r.stdout if r.returncode == 0 else None
    return read


def tree_reader(root: str, *, prefix: str = "") -> Reader:
    """Read ``prefix + path`` from a work tree (``None`` when absent)."""
    def read(path: str) -> str | None:
        p = Path(root) / (prefix + path)
        return p.read_text() if p.is_file() else None
    return read


def routed(routes: Mapping[str, Reader], default: Reader) -> Reader:
    """A reader that sends a path starting with one of ``routes``' keys to that reader."""
    def read(path: str) -> str | None:
        for start, reader in routes.items():
            if path.startswith(start):
                return reader(path)
        return default(path)
    return read


def commit_of(git_dir: str, ref: str) -> str:
    """The commit ``ref`` names in ``git_dir``."""
    return subprocess.run(["git", "--git-dir", git_dir, "rev-parse", f"{ref}^{{commit}}"],
                          capture_output=True, text=True, check=True).stdout.strip()


class Source:
    """Top-level definitions of a package's modules, following ``from X import Y`` re-exports."""

    def __init__(self, read: Reader) -> None:
        self.read = read
        self._trees: dict[str, ast.Module | None] = {}
        self._packages: set[str] = set()

    def module(self, dotted: str) -> ast.Module | None:
        """The AST of module ``dotted`` (``a/b.py`` or ``a/b/__init__.py``), or None."""
        if dotted not in self._trees:
            base = dotted.replace(".", "/")
            text = self.read(base + ".py")
            if text is None:
                text = self.read(base + "/__init__.py")
                if text is not None:
                    self._packages.add(dotted)
            self._trees[dotted] = ast.parse(text) if text is not None else None
        return self._trees[dotted]

    def absolute(self, module: str, node: ast.ImportFrom) -> str | None:
        """The module an ``ImportFrom`` in ``module`` names (relative imports resolved)."""
        if node.level == 0:
            return node.module
        package = module if module in self._packages else module.rpartition(".")[0]
        for _ in range(node.level - 1):
            package = package.rpartition(".")[0]
        return f"{package}.{node.module}" if node.module else package

    def find(self, module: str, name: str, depth: int = 0) -> tuple[str, ast.AST] | None:
        """The definition of ``name`` as seen from ``module`` (its defining module and node)."""
        tree = self.module(module)
        if tree is None or depth > 8:
            return None
        for node in tree.body:
            if isinstance(node, ast.FunctionDef | ast.ClassDef) and node.name == name:
                return module, node
        for node in tree.body:
            if isinstance(node, ast.ImportFrom):
                for alias in node.names:
                    if (alias.asname or alias.name) == name:
                        target = self.absolute(module, node)
                        if target is None:
                            continue
                        found = self.find(target, alias.name, depth + 1)
                        if found is None and node.module is None:  # `from . import sub`: a module, not a name
                            continue
                        return found
        return None


def params(fn: ast.FunctionDef, *, drop_self: bool = False) -> dict[str, Any]:
    """Parameter names, the required ones, and whether it takes ``*args`` / ``**kwargs``."""
    args = fn.args
    positional = [a.arg for a in [*args.posonlyargs, *args.args]]
    if drop_self and positional:
        positional = positional[1:]
    n_defaults = len(args.defaults)
    required = positional[: len(positional) - n_defaults] if n_defaults else list(positional)
    kwonly = [a.arg for a in args.kwonlyargs]
    required += [a.arg for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True) if d is None]
    out: dict[str, Any] = {"params": positional + kwonly, "required": required}
    if args.vararg is not None:
        out["varargs"] = True
    if args.kwarg is not None:
        out["varkw"] = True
    return out


def _own_returns(fn: ast.FunctionDef) -> list[ast.Return]:
    """The ``return`` statements of ``fn`` itself, not of functions defined inside it."""
    out: list[ast.Return] = []
    todo: list[ast.AST] = list(fn.body)
    while todo:
        node = todo.pop()
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda | ast.ClassDef):
            continue
        if isinstance(node, ast.Return):
            out.append(node)
        todo.extend(ast.iter_child_nodes(node))
    return out


def returned_tuple_len(fn: ast.FunctionDef) -> int | None:
    """How many values ``fn`` returns when every one of its own returns is a tuple literal
    of one length (else its ``-> tuple[...]`` annotation's length, else None)."""
    sizes = {len(r.value.elts) for r in _own_returns(fn) if isinstance(r.value, ast.Tuple)}
    if len(sizes) == 1:
        return sizes.pop()
    ann = fn.returns
    if isinstance(ann, ast.Subscript) and ast.unparse(ann.value) in ("tuple", "Tuple", "typing.Tuple"):
        inner = ann.slice
        return len(inner.elts) if isinstance(inner, ast.Tuple) else 1
    return None


def _decorators(cls: ast.ClassDef) -> list[str]:
    return [ast.unparse(d).split("(")[0] for d in cls.decorator_list]


def class_fields(src: Source, module: str, cls: ast.ClassDef, depth: int = 0) -> list[str]:
    """Annotated attribute names of ``cls`` and of its bases found in the source (bases
    first, as a dataclass orders them; ``ClassVar`` annotations left out)."""
    seen: list[str] = []
    if depth < 12:
        for base in cls.bases:
            name = ast.unparse(base)
            if "." in name or name in ("object", "Generic", "TypedDict", "BaseModel", "ABC"):
                continue
            found = src.find(module, name)
            if found is not None and isinstance(found[1], ast.ClassDef):
                for f in class_fields(src, found[0], found[1], depth + 1):
                    if f not in seen:
                        seen.append(f)
    for stmt in cls.body:
        if (isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)
                and "ClassVar" not in ast.unparse(stmt.annotation) and stmt.target.id not in seen):
            seen.append(stmt.target.id)
    return seen


def field_annotations(cls: ast.ClassDef) -> dict[str, str]:
    """``{field: annotation source}`` of a class's own annotated attributes."""
    return {s.target.id: ast.unparse(s.annotation) for s in cls.body
            if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)}


def unpacked_kwargs(src: Source, module: str, fn: ast.FunctionDef) -> list[str] | None:
    """The keys ``**kwargs: Unpack[SomeTypedDict]`` accepts (bases merged), or None when the
    function takes no such ``**kwargs`` or the TypedDict is not found."""
    ann = fn.args.kwarg.annotation if fn.args.kwarg is not None else None
    if not (isinstance(ann, ast.Subscript) and ast.unparse(ann.value).rpartition(".")[2] == "Unpack"):
        return None
    keys = typed_dict_keys(src, module, ast.unparse(ann.slice))
    return sorted({*keys["required"], *keys["optional"]}) if keys else None


def describe(src: Source, dotted: str) -> dict[str, Any] | None:
    """What a caller needs to know about the object ``dotted`` names (None: not there).

    A function: ``params``, ``required``, ``varargs``/``varkw`` (with ``varkw_keys``, the keys of
    an ``Unpack[TypedDict]`` annotation) and ``returns_tuple_of``.
    A class: its ``__init__`` parameters, or for a dataclass its fields (inherited
    included) as ``params`` and the ones without a default as ``required``; plus
    ``fields`` (every annotated attribute, inherited included) and ``decorators``.
    ``Class.method`` describes a method (``self`` dropped).
    """
    module, _, name = dotted.rpartition(".")
    owner = None
    found = src.find(module, name)
    if found is None and "." in module:  # Class.method
        module, _, owner = module.rpartition(".")
        found = src.find(module, owner)
        if found is not None and isinstance(found[1], ast.ClassDef):
            method = next((b for b in found[1].body if isinstance(b, ast.FunctionDef) and b.name == name), None)
            if method is None:
                return None
            return {"defined_in": f"{found[0]}.{owner}", "kind": "method", **params(method, drop_self=True)}
        return None
    if found is None:
        return None
    defined_in, node = found
    out: dict[str, Any] = {"defined_in": defined_in}
    if isinstance(node, ast.FunctionDef):
        out.update(kind="function", **params(node))
        keys = unpacked_kwargs(src, defined_in, node)
        if keys is not None:
            out["varkw_keys"] = keys
        n = returned_tuple_len(node)
        if n is not None:
            out["returns_tuple_of"] = n
        return out
    assert isinstance(node, ast.ClassDef)
    out["decorators"] = _decorators(node)
    fields = class_fields(src, defined_in, node)
    init = next((b for b in node.body if isinstance(b, ast.FunctionDef) and b.name == "__init__"), None)
    if init is not None:
        out.update(kind="class", **params(init, drop_self=True))
    elif any("dataclass" in d for d in out["decorators"]):
        own = [s for s in node.body if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)]
        out.update(kind="class", params=fields,
                   required=[s.target.id for s in own if s.value is None])  # type: ignore[union-attr]
    else:
        out.update(kind="class", params=[], required=[])
    out["fields"] = fields
    return out


def constant(src: Source, dotted: str) -> Any:
    """The value of the module-level constant ``dotted`` names, when it is a literal (a
    ``frozenset``/``set``/``tuple``/``list`` of literals becomes a sorted list); None when
    the module or the name is not there or the value is not a literal."""
    module, _, name = dotted.rpartition(".")
    tree = src.module(module)
    for node in tree.body if tree is not None else ():
        targets = node.targets if isinstance(node, ast.Assign) else \
            [node.target] if isinstance(node, ast.AnnAssign) and node.value is not None else []
        if not any(isinstance(t, ast.Name) and t.id == name for t in targets):
            continue
        value = node.value
        wrapped = isinstance(value, ast.Call) and ast.unparse(value.func) in ("frozenset", "set", "tuple", "list") \
            and len(value.args) == 1
        try:
            found = ast.literal_eval(value.args[0] if wrapped else value)  # type: ignore[union-attr]
        except ValueError:
            return None
        return sorted(found) if isinstance(found, set | frozenset | tuple | list) else found
    return None


def typed_dict_keys(src: Source, module: str, name: str) -> dict[str, list[str]] | None:
    """Required and optional keys of a TypedDict (or a pydantic model's fields), bases
    merged (``NotRequired[...]``/``Optional`` with a default are optional)."""
    found = src.find(module, name)
    if found is None or not isinstance(found[1], ast.ClassDef):
        return None
    defined_in, cls = found
    required: set[str] = set()
    optional: set[str] = set()
    for base in cls.bases:
        base_name = ast.unparse(base)
        if base_name not in ("TypedDict", "BaseModel"):
            inherited = typed_dict_keys(src, defined_in, base_name)
            if inherited:
                required |= set(inherited["required"])
                optional |= set(inherited["optional"])
    for stmt in cls.body:
        if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
            soft = "NotRequired" in ast.unparse(stmt.annotation) or stmt.value is not None
            (optional if soft else required).add(stmt.target.id)
    return {"required": sorted(required), "optional": sorted(optional - required)}


def class_kind(src: Source, dotted: str) -> str | None:
    """``TypedDict``, ``BaseModel``, ``dataclass`` or ``class`` for the class ``dotted`` names."""
    module, _, name = dotted.rpartition(".")
    found = src.find(module, name)
    if found is None or not isinstance(found[1], ast.ClassDef):
        return None
    bases = [ast.unparse(b) for b in found[1].bases]
    for kind in ("TypedDict", "BaseModel"):
        if kind in bases:
            return kind
    return "dataclass" if any("dataclass" in d for d in _decorators(found[1])) else "class"


def package_version(src: Source, module: str) -> str | None:
    """``MAJOR.MINOR.PATCH`` + ``PRE_RELEASE`` of ``<module>.package_info`` (the version it reports)."""
    tree = src.module(f"{module}.package_info")
    if tree is None:
        return None
    consts = {t.id: n.value.value for n in tree.body if isinstance(n, ast.Assign)
              for t in n.targets if isinstance(t, ast.Name) and isinstance(n.value, ast.Constant)}
    if "MAJOR" not in consts:
        return None
    return f"{consts['MAJOR']}.{consts['MINOR']}.{consts['PATCH']}{consts.get('PRE_RELEASE') or ''}"
