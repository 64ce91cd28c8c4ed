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
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"
LIBRARY = SRC / "nemo_runspec"

ANY_PER_1000_CEILING = 2.71  # the target (at most 3) is reached; type what crosses a function instead of Any
LOOSE_MODULES_CEILING = 9  # the target (at most 12) is reached; a new loose module goes into the folder of its layer
#: every module over 500 lines (the target, none, is reached); a new one fails, one that shrinks must leave the list
LONG_MODULES: set[str] = set()
UPWARD_IMPORTS_CEILING = 0  # the target
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
