"""``[[tool.runspec.scales]]``: what each entry says and how it is checked (stdlib only).

An entry is a set of cells, every combination of its ``gpu_types``, ``nodes`` and
``precisions``, that share the entry's ``overrides`` (config keys, e.g. the
parallelism sizes and micro batch for that scale), optional ``image`` (the
container for those GPUs) and ``gpus_per_node``. ``configs`` says which of the
recipe's configs the entry is for (default: all). ``exact = false`` makes every
power of two above the largest listed node count a cell too (llmb's
``exact_scales``). ``note`` says where the numbers come from.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

#: Precisions a cell may name (llmb's dtypes, plus the CPU fallback's fp32).
PRECISIONS = ("bf16", "fp8", "nvfp4", "mxfp8", "fp16", "fp32")
#: Keys of one ``[[tool.runspec.scales]]`` entry.
ENTRY_KEYS = ("configs", "gpu_types", "nodes", "exact", "precisions", "gpus_per_node", "overrides",
              "image", "note")
_NAME = re.compile(r"^[a-z0-9][a-z0-9_.-]*$")
_KEY = re.compile(r"^[A-Za-z_][\w-]*(\.[A-Za-z_0-9][\w-]*)*$")


@dataclass(frozen=True)
class Cell:
    """One supported scale: a GPU type, a node count, a precision."""

    gpu_type: str
    nodes: int
    precision: str

    def __str__(self) -> str:
        return f"{self.gpu_type} x {self.nodes} node{'s' if self.nodes != 1 else ''} {self.precision}"


@dataclass(frozen=True)
class ScaleEntry:
    """One ``[[tool.runspec.scales]]`` entry (see the module docstring)."""

    gpu_types: tuple[str, ...]
    nodes: tuple[int, ...]
    precisions: tuple[str, ...]
    configs: tuple[str, ...] = ()
    exact: bool = True
    gpus_per_node: int | None = None
    overrides: Mapping[str, Any] = field(default_factory=dict, hash=False)
    image: str | None = None
    note: str | None = None
    #: position in the runspec (0-based), for messages
    index: int = 0

    def for_config(self, name: str | None) -> bool:
        """True when the entry applies to config ``name``."""
        return not self.configs or name in self.configs

    def has_nodes(self, nodes: int) -> bool:
        """Whether ``nodes`` is one of the entry's node counts (or a power of two above
        them when not ``exact``)."""
        if nodes in self.nodes:
            return True
        return not self.exact and nodes > max(self.nodes) and nodes & (nodes - 1) == 0

    def cells(self) -> Iterator[Cell]:
        """The listed cells (a non-exact entry's powers of two beyond them are not listed)."""
        for g in self.gpu_types:
            for n in self.nodes:
                for p in self.precisions:
                    yield Cell(g, n, p)

    def to_dict(self) -> dict[str, Any]:
        """Plain data, as written."""
        out: dict[str, Any] = {"gpu_types": list(self.gpu_types), "nodes": list(self.nodes),
                               "precisions": list(self.precisions)}
        if self.configs:
            out["configs"] = list(self.configs)
        if not self.exact:
            out["exact"] = False
        for key in ("gpus_per_node", "image", "note"):
            if getattr(self, key) is not None:
                out[key] = getattr(self, key)
        if self.overrides:
            out["overrides"] = dict(self.overrides)
        return out


Fail = Callable[[str, str, "str | None"], None]


def read_entries(raw: object, fail: Fail) -> tuple[ScaleEntry, ...]:
    """The entries of ``scales`` (a list of tables); each problem is reported through
    ``fail(key, problem, hint)`` (the runspec parser's, with the script line)."""
    if raw is None:
        return ()
    if not isinstance(raw, list) or not all(isinstance(e, dict) for e in raw):
        fail("scales", "'scales' must be a list of tables", "write each entry as [[tool.runspec.scales]]")
        return ()
    entries = []
    seen: dict[tuple[str | None, Cell], int] = {}
    for i, table in enumerate(raw):
        entry = _entry(table, i, fail)
        if entry is None:
            continue
        for cell in entry.cells():
            for config in entry.configs or (None,):
                if (config, cell) in seen:
                    fail(f"scales[{i}]", f"scale cell {cell}" + (f" of config {config}" if config else "")
                         + f" is declared twice (entries {seen[(config, cell)]} and {i})",
                         "give each cell one entry")
                seen[(config, cell)] = i
        entries.append(entry)
    return tuple(entries)


def _names(table: Mapping[str, Any], key: str, where: str, fail: Fail, *, known: tuple[str, ...] = ()) -> tuple[str, ...]:
    value = table.get(key)
    if not isinstance(value, list) or not value or not all(isinstance(v, str) for v in value):
        fail(f"{where}.{key}", f"'{where}.{key}' must be a non-empty list of names", f'e.g. {key} = ["h100"]')
        return ()
    for v in value:
        if not _NAME.match(v):
            fail(f"{where}.{key}", f"invalid name {v!r} in {where}.{key}", "lowercase letters, digits, '.', '_', '-'")
        elif known and v not in known:
            from nemo_runspec._suggest import did_you_mean

            fail(f"{where}.{key}", f"unknown precision {v!r} in {where}.{key}", did_you_mean(v, known, listing=True))
    return tuple(value)


def _entry(table: Mapping[str, Any], i: int, fail: Fail) -> ScaleEntry | None:
    from nemo_runspec._suggest import did_you_mean

    where = f"scales[{i}]"
    errors_before = _Counter(fail)
    for key in table:
        if key not in ENTRY_KEYS:
            errors_before(f"{where}.{key}", f"unknown key '{key}' in {where}", did_you_mean(key, ENTRY_KEYS, listing=True))
    gpu_types = _names(table, "gpu_types", where, errors_before)
    precisions = _names(table, "precisions", where, errors_before, known=PRECISIONS)
    nodes = table.get("nodes")
    if (not isinstance(nodes, list) or not nodes
            or not all(isinstance(n, int) and not isinstance(n, bool) and n >= 1 for n in nodes)):
        errors_before(f"{where}.nodes", f"'{where}.nodes' must be a non-empty list of node counts (integers >= 1)",
                      "e.g. nodes = [1, 2, 4]")
        nodes = []
    configs = table.get("configs", [])
    if not isinstance(configs, list) or not all(isinstance(c, str) and c for c in configs):
        errors_before(f"{where}.configs", f"'{where}.configs' must be a list of config names", 'e.g. configs = ["default"]')
        configs = []
    exact = table.get("exact", True)
    if not isinstance(exact, bool):
        errors_before(f"{where}.exact", f"'{where}.exact' must be true or false", None)
        exact = True
    gpn = table.get("gpus_per_node")
    if gpn is not None and (isinstance(gpn, bool) or not isinstance(gpn, int) or gpn < 0):
        errors_before(f"{where}.gpus_per_node", f"'{where}.gpus_per_node' must be an integer >= 0", None)
        gpn = None
    overrides = table.get("overrides", {})
    if not isinstance(overrides, dict):
        errors_before(f"{where}.overrides", f"'{where}.overrides' must be a table of config keys", None)
        overrides = {}
    for key in overrides:
        if not _KEY.match(key) or key == "run" or key.startswith("run."):
            errors_before(f"{where}.overrides", f"invalid config key {key!r} in {where}.overrides",
                          "dotted config keys such as model.tensor_model_parallel_size (not run.*)")
    image, note = table.get("image"), table.get("note")
    for key, value in (("image", image), ("note", note)):
        if value is not None and (not isinstance(value, str) or not value.strip()):
            errors_before(f"{where}.{key}", f"'{where}.{key}' must be a non-empty string", None)
    if errors_before.count:
        return None
    return ScaleEntry(gpu_types=gpu_types, nodes=tuple(dict.fromkeys(nodes)), precisions=precisions,
                      configs=tuple(configs), exact=exact, gpus_per_node=gpn, overrides=dict(overrides),
                      image=image, note=note, index=i)


class _Counter:
    """``fail`` that also counts (an entry with a problem is left out)."""

    def __init__(self, fail: Fail) -> None:
        self.fail, self.count = fail, 0

    def __call__(self, key: str, problem: str, hint: str | None) -> None:
        self.count += 1
        self.fail(key, problem, hint)
