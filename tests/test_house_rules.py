"""House rules as numbers that may only go down (issue 31's ratchet).

Each CEILING is the count on the day the check came in; the issue's targets are in the comments.
A change that raises a count fails here; one that lowers it should lower the ceiling too (the
failure message of the next change that would raise it again says where it was).

How each number is counted (the same way before and after a change):

- ``: Any`` per 1,000 lines: physical lines of ``src/nemo_runspec/**/*.py`` holding ``: Any``
  (a word), per 1,000 physical lines of those files.
- loose modules: ``src/nemo_runspec/*.py`` other than ``__init__.py``.
- long modules: ``src/**/*.py`` (library and CLI) over 500 physical lines.
- upward imports: import statements (``import``/``from ... import``, module level, in functions
  or under ``TYPE_CHECKING`` alike) in ``src/nemo_runspec`` outside ``nemo_runspec/cli/`` that
  name ``nemo_runspec.cli`` or a module under it.
- import cycles, counted on the imports of ``src/nemo_runspec`` (every import statement: module
  level, in functions or under ``TYPE_CHECKING`` alike; relative ones resolved). An import names
  the longest module of the package its dotted path starts with; ``from P import N`` names the
  submodule ``P.N`` when there is one, else ``P`` (so ``from nemo_runspec import files`` is
  ``files.py``, ``from nemo_runspec import __version__`` the package face). Only the named
  module counts, not the parent packages Python runs first.

  * file cycles: modules (a package's ``__init__.py`` is the package) that import each other
    round a loop: each strongly connected group of two or more is one.
  * room cycles: the same on rooms, a room being a folder of ``src/nemo_runspec`` (with all
    below it), a top-level module, or the package face ``__init__.py``. A failure lists the
    imports that close the loops, ``path:line module``: per group of rooms in a loop, the
    arrows (all imports from one room to another) that run back against an order of those
    rooms putting few imports against it (the greedy order of Eades, Lin and Smyth, then each
    room moved to its best place), the thinnest arrow first: those are what to move.
"""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"
LIBRARY = SRC / "nemo_runspec"

ANY_PER_1000_CEILING = 2.71  # the target (at most 3) is reached; type what crosses a function instead of Any
LOOSE_MODULES_CEILING = 11  # the target (at most 12) is reached; a new loose module goes into the folder of its layer
# (9 -> 11: _nemo_run.py and _invoke.py, how nemo-run is imported and invoke patched, moved down out of
# execution/ because packaging/ below it imports them too; no folder is low enough and about nemo-run)
#: every module over 500 lines (the target, none, is reached); a new one fails, one that shrinks must leave the list
LONG_MODULES: set[str] = set()
UPWARD_IMPORTS_CEILING = 0  # the target
FILE_CYCLES_CEILING = 0  # the target (3 cycles on f17ec41, before the check came in)
ROOM_CYCLES_CEILING = 0  # the target: the folders of src/nemo_runspec are layers (11 closing imports on f17ec41)
MAX_LINES = 500


def _lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines()


def any_per_1000(library: Path = LIBRARY) -> float:
    """Lines with ``: Any`` per 1,000 lines of the library."""
    files = sorted(library.rglob("*.py"))
    total = sum(len(_lines(p)) for p in files)
    with_any = sum(1 for p in files for line in _lines(p) if re.search(r": Any\b", line))
    return 1000 * with_any / total


def loose_modules(library: Path = LIBRARY) -> list[str]:
    """The modules at the top of the library package."""
    return sorted(p.name for p in library.glob("*.py") if p.name != "__init__.py")


def long_modules(src: Path = SRC) -> dict[str, int]:
    """``{path under src: lines}`` of every module over MAX_LINES lines."""
    sizes = {str(p.relative_to(src)): len(_lines(p)) for p in src.rglob("*.py")}
    return {path: n for path, n in sorted(sizes.items()) if n > MAX_LINES}


def _names_cli(module: str | None) -> bool:
    return module is not None and (module == "nemo_runspec.cli" or module.startswith("nemo_runspec.cli."))


def upward_imports(library: Path = LIBRARY) -> list[str]:
    """``path:line module`` of every import of ``nemo_runspec.cli`` from the library outside it."""
    found = []
    for path in sorted(library.rglob("*.py")):
        rel = path.relative_to(library)
        if rel.parts[0] == "cli":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.level == 0:
                names = [node.module] if _names_cli(node.module) else []
                if node.module == "nemo_runspec":
                    names += [f"nemo_runspec.{a.name}" for a in node.names if a.name == "cli"]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names if _names_cli(a.name)]
            else:
                continue
            found += [f"src/nemo_runspec/{rel}:{node.lineno} {name}" for name in names]
    return found


def _modules(library: Path) -> dict[str, Path]:
    """``{dotted module name: path}`` of every module of the package at ``library``."""
    out = {}
    for path in library.rglob("*.py"):
        parts = (library.name, *path.relative_to(library).with_suffix("").parts)
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


def imports(library: Path = LIBRARY) -> Iterator[tuple[str, str, str]]:
    """``(importing module, "path:line", imported module)`` of every import of the package
    by itself (how a name is resolved: the module docstring)."""
    modules = _modules(library)
    top = library.name
    for name, path in sorted(modules.items(), key=lambda item: str(item[1])):
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        where = f"src/{path.relative_to(library.parent)}"
        nodes = ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        for node in sorted((n for n in nodes if isinstance(n, ast.Import | ast.ImportFrom)), key=lambda n: n.lineno):
            if isinstance(node, ast.Import):
                named = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = package.split(".")[:len(package.split(".")) - node.level + 1] if node.level else []
                module = ".".join([*base, node.module] if node.module else base)
                named = [f"{module}.{a.name}" if f"{module}.{a.name}" in modules else module for a in node.names]
            for target in dict.fromkeys(named):
                if target != top and not target.startswith(f"{top}."):
                    continue
                while target not in modules:
                    target = target.rpartition(".")[0]
                yield name, f"{where}:{node.lineno}", target


def _loops(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of two or more nodes of ``graph`` (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = stack[stack.index(node):]
            del stack[stack.index(node):]
            if len(group) > 1:
                found.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found)


def file_cycles(library: Path = LIBRARY) -> list[list[str]]:
    """The modules of each import cycle among the package's files."""
    graph: dict[str, set[str]] = defaultdict(set)
    for src, _, dst in imports(library):
        if src != dst:
            graph[src].add(dst)
    return _loops(graph)


def _room(module: str, library: Path) -> str:
    parts = module.split(".")
    if len(parts) == 1:
        return "__init__.py"
    return parts[1] if (library / parts[1]).is_dir() else f"{parts[1]}.py"


def _order(rooms: list[str], weight: dict[tuple[str, str], int]) -> list[str]:
    """``rooms`` in an order with few imports against it: Eades, Lin and Smyth's greedy order
    (sinks last, sources first, else the room sending the most more than it receives), then
    each room moved to its best place while that puts fewer against it."""
    weight = {(a, b): w for (a, b), w in weight.items() if a in rooms and b in rooms and a != b}
    left, head, tail = set(rooms), [], []

    def net(r: str) -> tuple[int, int]:
        return (sum(w for (a, b), w in weight.items() if a == r and b in left),
                sum(w for (a, b), w in weight.items() if b == r and a in left))

    while left:
        if sinks := sorted(r for r in left if not net(r)[0]):
            tail[:0] = sinks
            left -= set(sinks)
        elif sources := sorted(r for r in left if not net(r)[1]):
            head += sources
            left -= set(sources)
        else:
            pick = max(sorted(left), key=lambda r: net(r)[0] - net(r)[1])
            head.append(pick)
            left.discard(pick)
    order = head + tail

    def against(order: list[str]) -> int:
        rank = {r: i for i, r in enumerate(order)}
        return sum(w for (a, b), w in weight.items() if rank[a] > rank[b])

    best = against(order)
    improved = True
    while improved:
        improved = False
        for room in list(order):
            rest = [r for r in order if r != room]
            trial = min((rest[:i] + [room] + rest[i:] for i in range(len(order))), key=against)
            if against(trial) < best:
                order, best, improved = trial, against(trial), True
    return order


def room_cycle_edges(library: Path = LIBRARY) -> list[str]:
    """``path:line module`` of the imports that close the cycles among the package's rooms
    (see the module docstring); empty when the rooms are layers."""
    arrows: dict[tuple[str, str], list[str]] = defaultdict(list)
    for src, where, dst in imports(library):
        a, b = _room(src, library), _room(dst, library)
        if a != b:
            arrows[a, b].append(f"{where} {dst}")
    graph: dict[str, set[str]] = defaultdict(set)
    for a, b in arrows:
        graph[a].add(b)
    found = []
    for rooms in _loops(graph):
        rank = {r: i for i, r in enumerate(_order(rooms, {ab: len(v) for ab, v in arrows.items()}))}
        back = [ab for ab in arrows if ab[0] in rank and ab[1] in rank and rank[ab[0]] > rank[ab[1]]]
        for ab in sorted(back, key=lambda ab: (len(arrows[ab]), ab)):
            found += arrows[ab]
    return found


def test_any_per_1000_lines_does_not_grow() -> None:
    ratio = any_per_1000()
    assert ratio <= ANY_PER_1000_CEILING, (
        f"src/nemo_runspec has {ratio:.2f} lines with ': Any' per 1,000 lines (at most {ANY_PER_1000_CEILING}): "
        "type what crosses the function (a dataclass, a Protocol, Mapping[str, object], the real class "
        "under TYPE_CHECKING)")


def test_no_new_loose_module() -> None:
    loose = loose_modules()
    assert len(loose) <= LOOSE_MODULES_CEILING, (
        f"{len(loose)} modules at the top of src/nemo_runspec (at most {LOOSE_MODULES_CEILING}): put the new "
        f"one in the package of its layer; today: {loose}")


def test_no_new_module_over_500_lines() -> None:
    long = long_modules()
    grown = {p: n for p, n in long.items() if p not in LONG_MODULES}
    assert grown == {}, f"modules over {MAX_LINES} lines: {grown} (split them: one job per module)"
    shrunk = sorted(LONG_MODULES - set(long))
    assert shrunk == [], f"{shrunk} are {MAX_LINES} lines or fewer now: delete them from LONG_MODULES"


def test_no_new_upward_import_into_the_cli() -> None:
    found = upward_imports()
    assert len(found) <= UPWARD_IMPORTS_CEILING, (
        f"{len(found)} imports of nemo_runspec.cli from the library outside it (at most "
        f"{UPWARD_IMPORTS_CEILING}); the library must not depend on its CLI layer:\n" + "\n".join(found))


def test_no_import_cycle_among_the_files() -> None:
    found = file_cycles()
    assert len(found) <= FILE_CYCLES_CEILING, (
        f"{len(found)} import cycles among the files of src/nemo_runspec (at most {FILE_CYCLES_CEILING}); "
        "move what both need into the lower one (or a new small module), or pass it in:\n"
        + "\n".join(", ".join(group) for group in found))


def test_no_import_cycle_among_the_folders() -> None:
    found = room_cycle_edges()
    assert len(found) <= ROOM_CYCLES_CEILING, (
        f"the folders of src/nemo_runspec import each other round a loop; the imports that close it "
        f"(at most {ROOM_CYCLES_CEILING}): move what they take into a lower layer, or pass it in:\n"
        + "\n".join(found))


def test_the_counters_count(tmp_path: Path) -> None:
    """Each counter on a small tree whose numbers are known."""
    lib = tmp_path / "src" / "nemo_runspec"
    (lib / "cli").mkdir(parents=True)
    (lib / "__init__.py").write_text("")
    (lib / "cli" / "ok.py").write_text("from nemo_runspec.cli import x\n")  # inside cli: not upward
    (lib / "a.py").write_text("from typing import Any\n\ndef f(x: Any) -> None:\n"
                              "    from nemo_runspec.cli.display import show\n    import nemo_runspec.cli.help\n")
    (lib / "b.py").write_text("from nemo_runspec import cli\nfrom nemo_runspec import clip\n" + "x = 1\n" * 600)
    assert loose_modules(lib) == ["a.py", "b.py"]
    assert long_modules(tmp_path / "src") == {"nemo_runspec/b.py": 602}
    assert upward_imports(lib) == ["src/nemo_runspec/a.py:4 nemo_runspec.cli.display",
                                "src/nemo_runspec/a.py:5 nemo_runspec.cli.help",
                                "src/nemo_runspec/b.py:1 nemo_runspec.cli"]
    assert any_per_1000(lib) == 1000 * 1 / (1 + 5 + 602)  # one ': Any' line in 608


def test_the_cycle_counters_count(tmp_path: Path) -> None:
    """Cycles through a relative import in a function and one under TYPE_CHECKING are found;
    ``from nemo_runspec import c`` names the module c, not the package face."""
    lib = tmp_path / "src" / "nemo_runspec"
    for folder in ("a", "b"):
        (lib / folder).mkdir(parents=True)
        (lib / folder / "__init__.py").write_text("")
    (lib / "__init__.py").write_text("from nemo_runspec.e import VALUE\n")
    (lib / "a" / "x.py").write_text("from nemo_runspec.b.y import f\n")
    (lib / "b" / "y.py").write_text("def f():\n    from ..a import x\n")
    (lib / "c.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from nemo_runspec import d\n")
    (lib / "d.py").write_text("import nemo_runspec.c\n")
    (lib / "e.py").write_text("from nemo_runspec import c\nVALUE = 1\n")
    assert file_cycles(lib) == [["nemo_runspec.a.x", "nemo_runspec.b.y"], ["nemo_runspec.c", "nemo_runspec.d"]]
    # one import of each loop closes it; a second import b -> a makes a -> b the thinner arrow
    back = room_cycle_edges(lib)
    assert len(back) == 2 and back[1] in ("src/nemo_runspec/c.py:3 nemo_runspec.d", "src/nemo_runspec/d.py:1 nemo_runspec.c")
    assert back[0] in ("src/nemo_runspec/a/x.py:1 nemo_runspec.b.y", "src/nemo_runspec/b/y.py:2 nemo_runspec.a.x")
    (lib / "b" / "z.py").write_text("import nemo_runspec.a.x\n")
    assert room_cycle_edges(lib)[0] == "src/nemo_runspec/a/x.py:1 nemo_runspec.b.y"
    (lib / "d.py").write_text("")
    (lib / "b" / "y.py").write_text("")
    (lib / "b" / "z.py").write_text("")
    assert file_cycles(lib) == [] and room_cycle_edges(lib) == []
