"""No shared module branches on an executor's name (issue 31): a backend is its own file.

Everything that differs between executors is declared by the backend's class in its own
file (``src/nemo_runspec/backends/<name>.py``, the module the registry names) and read from
there by shared code. This check walks the ASTs of ``src/nemo_runspec`` and
``src/nemotron/cli`` and lists, as ``path:line``, every comparison (``==``, ``!=``, ``in``,
``not in``) of something that reads an executor with a built-in executor's name, outside
that backend's own file. The Slurm backend's own folder ``slurm/`` may know it is Slurm.

What reads an executor: an operand naming ``executor`` (``job.executor``,
``values.get("executor")``, ``executor_kind``) or, against a name other than ``local``, one
called ``kind``. ``local`` alone is also a tunnel's, a run mode's and a sweep step's value
(``tunnel_kind == "local"``), so only an operand naming ``executor`` counts against it; the
other names are backends' only (NeMo Evaluator's own ``execution.type == "slurm"`` names
neither).
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from pathlib import Path

from nemo_runspec.env.registry import BUILTIN

ROOT = Path(__file__).resolve().parents[1]
SCANNED = (ROOT / "src" / "nemo_runspec", ROOT / "src" / "nemotron" / "cli")
#: names whose comparison counts only against an operand naming ``executor`` (see the docstring)
AMBIGUOUS = frozenset({"local"})
#: a backend's folders beyond its own module (the Slurm backend's modules under slurm/)
OWN_FOLDERS: dict[str, tuple[str, ...]] = {"slurm": ("src/nemo_runspec/slurm",)}


def own_paths(name: str) -> tuple[str, ...]:
    """The files (and folders) of backend ``name``, relative to the checkout."""
    module = BUILTIN[name].partition(":")[0]
    return ("src/" + module.replace(".", "/") + ".py", *OWN_FOLDERS.get(name, ()))


def _names_in(node: ast.expr) -> set[str]:
    """The string constants ``node`` is (a constant, or a tuple/list/set literal of them)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return {node.value}
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return {e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)}
    return set()


def _words(node: ast.expr) -> set[str]:
    """The identifiers, attribute names and string constants inside ``node``."""
    out: set[str] = set()
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name):
            out.add(sub.id)
        elif isinstance(sub, ast.Attribute):
            out.add(sub.attr)
        elif isinstance(sub, ast.Constant) and isinstance(sub.value, str):
            out.add(sub.value)
    return out


def compared_names(compare: ast.Compare, names: Iterable[str]) -> set[str]:
    """The executor ``names`` that ``compare`` tests something reading an executor against."""
    names = set(names)
    operands = [compare.left, *compare.comparators]
    hits = set().union(*(_names_in(o) for o in operands)) & names
    if not hits:
        return set()
    words = set().union(*(_words(o) for o in operands if not _names_in(o) & names))
    if any("executor" in w for w in words):
        return hits
    return hits - AMBIGUOUS if "kind" in words else set()


def offenders(roots: Iterable[Path] = SCANNED, base: Path = ROOT) -> list[str]:
    """``path:line: names`` of every comparison on built-in executor names outside their own files."""
    owned = {name: own_paths(name) for name in BUILTIN}
    out = []
    for root in roots:
        for path in sorted(root.rglob("*.py")):
            rel = path.relative_to(base).as_posix()
            compares = [n for n in ast.walk(ast.parse(path.read_text(encoding="utf-8"))) if isinstance(n, ast.Compare)]
            for node in sorted(compares, key=lambda n: n.lineno):
                foreign = sorted(n for n in compared_names(node, BUILTIN)
                                 if not any(rel == p or rel.startswith(p + "/") for p in owned[n]))
                if foreign:
                    out.append(f"{rel}:{node.lineno}: {', '.join(foreign)}")
    return out


def test_no_shared_module_branches_on_an_executor_name() -> None:
    found = offenders()
    assert found == [], ("comparisons on executor names outside the backend's own file (declare it on the "
                         "backend class and read the declaration; docs/dev/architecture.md, 'Adding a "
                         "backend'):\n" + "\n".join(found))


def _compares(code: str) -> list[set[str]]:
    return [compared_names(n, BUILTIN) for n in ast.walk(ast.parse(code)) if isinstance(n, ast.Compare)]


def test_the_rule_tells_an_executor_from_a_tunnel_or_a_sweep_step() -> None:
    assert _compares('job.executor == "local"') == [{"local"}]
    assert _compares('values.get("executor") != "slurm"') == [{"slurm"}]
    assert _compares('kind in ("docker", "skypilot")') == [{"docker", "skypilot"}]
    assert _compares('prepared.kind == "lepton"') == [{"lepton"}]
    assert _compares('executor_kind not in {"local", "slurm"}') == [{"local", "slurm"}]
    # not an executor: a tunnel, a sweep step, the evaluator's own execution type, a protocol
    assert _compares('tunnel_kind == "local"') == [set()]
    assert _compares('kind == "local"') == [set()]
    assert _compares('execution.get("type") == "slurm"') == [set()]
    assert _compares('self.protocol in ("file", "local")') == [set()]


def test_a_backend_may_name_itself_in_its_own_file(tmp_path: Path) -> None:
    slurm_own = tmp_path / "src" / "nemo_runspec" / "slurm"
    slurm_own.mkdir(parents=True)
    (slurm_own / "prepared.py").write_text('if values.get("executor") == "slurm":\n    pass\n')
    shared = tmp_path / "src" / "nemo_runspec" / "job"
    shared.mkdir()
    (shared / "compiled.py").write_text('x = 1\nif self.executor in ("local", "docker"):\n    pass\n')
    assert offenders([tmp_path / "src"], base=tmp_path) == ["src/nemo_runspec/job/compiled.py:2: docker, local"]
