"""Shared pieces of ``nemotron nano3 data import``, and a Typer command class
whose plain parameters skip pydantic.

Typer 0.29 coerces every non-bool parameter through a pydantic ``TypeAdapter``
(building it imports pydantic, ~40 ms, even for an absent option). Commands
whose parameters are only ``str``, ``Path``, ``bool`` and lists of those do not
need that: :class:`PlainParamsCommand` gives them a pass-through converter.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import typer
from typer._coercion import RuntimeParam
from typer._typing import get_args, get_origin
from typer.core import TyperCommand

from nemo_runspec.cli.recipe_typer import FastHelpMixin
from nemo_runspec.errors import CLIUsageError, NemoRunspecError

_PLAIN: dict[Any, Callable[[Any], Any]] = {str: str, Path: Path, bool: bool}


def _converter(annotation: Any) -> Callable[[Any], Any] | None:
    if annotation in _PLAIN:
        return _PLAIN[annotation]
    if get_origin(annotation) is list:
        (item,) = get_args(annotation) or (str,)
        conv = _PLAIN.get(item)
        if conv is not None:
            return lambda values: [conv(v) for v in values]
    return None


class _PlainRuntimeParam(RuntimeParam):
    """Converts click's already-parsed strings without pydantic."""

    def __init__(self, parameter_info: Any, annotation: Any, convert: Callable[[Any], Any]) -> None:
        object.__setattr__(self, "parameter_info", parameter_info)
        object.__setattr__(self, "annotation", annotation)
        object.__setattr__(self, "_convert", convert)

    def _coerce_value(self, value: Any, param: Any, ctx: Any) -> Any:
        return self._convert(value)


class PlainParamsCommand(FastHelpMixin, TyperCommand):
    """A Typer command whose ``str``/``Path``/``bool``/``list[...]`` parameters skip pydantic."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        """Install pass-through converters, then parse as usual."""
        for param in self.params:
            desc = getattr(param, "type_descriptor", None)
            if desc is None or getattr(param, "_runtime_param", None) is not None:
                continue
            convert = _converter(desc.annotation)
            if convert is not None:
                param._runtime_param = _PlainRuntimeParam(desc.parameter_info, desc.annotation, convert)
        return super().parse_args(ctx, args)


# --------------------------------------------------------------------------- import helpers
#
# Layouts (what ``nemotron.data_prep`` writes, see docs/data-prep.md):
#
# pretrain  blend.json {"train"|"valid"|"test": [weight, prefix, ...] | null}; every
#           prefix has prefix.bin + prefix.idx (relative prefixes: relative to PATH).
#           A directory without blend.json but with .bin/.idx pairs gets a generated
#           blend.json (absolute prefixes; pairs under train/, valid/, test/ go to that
#           split, all others to train; weight = .bin size in bytes).
# sft       metadata.json + <split>/shard_*.parquet with input_ids, loss_mask,
#           seq_start_ids and num_tokens columns; the train split is not empty.
# rl        train.jsonl + validation.jsonl, one JSON object with "messages" per line.

DEFAULT_NAMES = {
    "pretrain": "nano3-pretrain-data",
    "sft": "nano3-sft-data",
    "rl": "nano3-rl-data",
}


def fail(exc: NemoRunspecError) -> None:
    """Print ``error: ...`` on one line and exit 2 (traceback with NEMOTRON_DEBUG=1)."""
    if os.environ.get("NEMOTRON_DEBUG", "").strip().lower() in ("1", "true", "yes", "on"):
        raise exc
    typer.echo(f"error: {exc}", err=True)
    raise typer.Exit(2)

SPLITS = ("train", "valid", "test")
SFT_COLUMNS = ("input_ids", "loss_mask", "seq_start_ids", "num_tokens")


def _bad(problem: str, path: Path, hint: str | None = None, line: int | None = None) -> CLIUsageError:
    return CLIUsageError(problem, path=path, line=line, hint=hint)


def _read_json(path: Path) -> Any:
    from nemo_runspec.files import read_text

    try:
        return json.loads(read_text(path, what="file", error=CLIUsageError))
    except json.JSONDecodeError as exc:
        raise _bad(f"invalid JSON: {exc.msg}", path, line=exc.lineno) from exc


def _source_metadata(root: Path) -> dict[str, Any]:
    meta = root / "metadata.json"
    if not meta.is_file():
        return {}
    data = _read_json(meta)
    return data if isinstance(data, dict) else {}


def generate_blend(root: Path) -> dict[str, list[str] | None]:
    """A blend for a directory of ``.bin``/``.idx`` pairs (see the layout notes above)."""
    blend: dict[str, list[str]] = {s: [] for s in SPLITS}
    for bin_path in sorted(root.rglob("*.bin")):
        prefix = bin_path.with_suffix("")
        if not prefix.with_suffix(".idx").is_file():
            raise _bad(f"{bin_path.name} has no matching {prefix.name}.idx", bin_path.parent,
                       hint="every .bin needs its .idx (Megatron indexed dataset)")
        rel = bin_path.relative_to(root).parts
        split = rel[0] if len(rel) > 1 and rel[0] in SPLITS else "train"
        blend[split] += [str(bin_path.stat().st_size), str(prefix.resolve())]
    return {s: (v or None) for s, v in blend.items()}


def check_pretrain(root: Path, *, write: bool = True) -> dict[str, Any]:
    """Validate a pretrain data dir (writing blend.json for a bare directory, unless
    ``write`` is false: then it is only checked); return metadata."""
    blend_path = root / "blend.json"
    generated = False
    if not blend_path.is_file():
        if not any(root.rglob("*.bin")):
            raise _bad("missing blend.json (and no .bin/.idx files to build one from)", root,
                       hint="expected the output of `nemotron nano3 data prep pretrain`")
        blend = generate_blend(root)
        if write:
            blend_path.write_text(json.dumps(blend, indent=2) + "\n", encoding="utf-8")
        generated = True
    blend = _read_json(blend_path) if not generated or write else blend
    if not isinstance(blend, dict) or not blend:
        raise _bad('blend.json must map splits to [weight, prefix, ...] lists', blend_path,
                   hint='e.g. {"train": ["1", "train/shard_00000"], "valid": null}')
    prefixes = 0
    nbytes = 0
    for split, entries in blend.items():
        if entries is None:
            continue
        if not isinstance(entries, list) or len(entries) % 2:
            raise _bad(f"split {split!r} must be null or a flat [weight, prefix, ...] list", blend_path)
        for weight, prefix in zip(entries[::2], entries[1::2], strict=True):
            try:
                float(weight)
            except (TypeError, ValueError):
                raise _bad(f"split {split!r}: weight {weight!r} is not a number", blend_path) from None
            p = Path(str(prefix))
            full = p if p.is_absolute() else root / p
            for suffix in (".bin", ".idx"):
                f = full.parent / (full.name + suffix)
                if not f.is_file():
                    raise _bad(f"split {split!r}: missing {f}", blend_path,
                               hint="each blend.json prefix needs .bin and .idx files")
            nbytes += (full.parent / (full.name + ".bin")).stat().st_size
            prefixes += 1
    if prefixes == 0:
        raise _bad("blend.json lists no data (every split is null)", blend_path)
    return {"prefixes": prefixes, "bin_bytes": nbytes, "blend_path": str(blend_path.resolve()),
            "blend_generated": generated}


def check_sft(root: Path) -> dict[str, Any]:
    """Validate a packed SFT data dir; return metadata (packs per split, pack_size)."""
    meta = root / "metadata.json"
    if not meta.is_file():
        raise _bad("missing metadata.json", root, hint="expected the output of `nemotron nano3 data prep sft`")
    import pyarrow.parquet as pq

    counts: dict[str, int] = {}
    for split in SPLITS:
        files = sorted((root / split).glob("shard_*.parquet"))
        rows = 0
        for f in files:
            try:
                schema = pq.read_schema(f)
                rows += pq.ParquetFile(f).metadata.num_rows
            except Exception as exc:  # noqa: BLE001 - pyarrow raises several types
                raise _bad(f"not a Parquet file: {exc}".split("\n")[0], f) from exc
            missing = [c for c in SFT_COLUMNS if c not in schema.names]
            if missing:
                raise _bad(f"missing column(s) {', '.join(missing)}", f,
                           hint=f"packed SFT shards have {', '.join(SFT_COLUMNS)}")
        if files:
            counts[split] = rows
    if not counts.get("train"):
        raise _bad("missing train/shard_*.parquet (no training packs)", root,
                   hint="expected <PATH>/train/shard_00000.parquet ...")
    pack_size = _source_metadata(root).get("pack_size")
    return {"packs": counts, "pack_size": pack_size, **check_sft_packed(root, pack_size)}


def check_sft_packed(root: Path, pack_size: Any) -> dict[str, Any]:
    """The Megatron-Bridge files SFT training reads (packed/*.npy and the packing metadata):
    present and well-formed; returns the ``packed_sequence_specs`` the SFT config maps."""
    from nemotron.data_prep.sft import (
        PACKED_DIR,
        PACKED_FILES,
        PACKING_METADATA,
        packed_sequence_specs,
    )

    for split in ("train", "valid"):
        f = root / PACKED_DIR / PACKED_FILES[split]
        if not f.is_file():
            raise _bad(f"missing {PACKED_DIR}/{PACKED_FILES[split]} (Megatron-Bridge's packed SFT file)", root,
                       hint="rerun `nemotron nano3 data prep sft` into this directory: it resumes and writes them")
        with open(f, "rb") as fh:
            if fh.read(6) != b"\x93NUMPY":
                raise _bad("not a .npy file", f)
    meta = root / PACKED_DIR / PACKING_METADATA
    packing = _read_json(meta) if meta.is_file() else None
    if not isinstance(packing, list) or not packing:
        raise _bad(f"missing or empty {PACKED_DIR}/{PACKING_METADATA}", root,
                   hint="rerun `nemotron nano3 data prep sft` into this directory")
    if not isinstance(pack_size, int) or pack_size < 1:
        raise _bad("metadata.json has no pack_size", root / "metadata.json")
    return {"packed_sequence_specs": packed_sequence_specs(pack_size)}


def check_rl(root: Path) -> dict[str, Any]:
    """Validate an RL data dir (train.jsonl + validation.jsonl); return record counts."""
    counts: dict[str, int] = {}
    for split in ("train", "validation"):
        f = root / f"{split}.jsonl"
        if not f.is_file():
            raise _bad(f"missing {split}.jsonl", root, hint="expected train.jsonl and validation.jsonl "
                       "(the output of `nemotron nano3 data prep rl`)")
        n = 0
        with open(f, encoding="utf-8") as fh:
            for i, line in enumerate(fh, 1):
                if not line.strip():
                    continue
                try:
                    rec = json.loads(line)
                except json.JSONDecodeError as exc:
                    raise _bad(f"invalid JSON: {exc.msg}", f, line=i) from exc
                if not isinstance(rec, dict) or not isinstance(rec.get("messages"), list):
                    raise _bad("record has no 'messages' list", f, line=i,
                               hint='each line: {"messages": [{"role": "user", "content": ...}], ...}')
                n += 1
        counts[split] = n
    if not counts["train"]:
        raise _bad("train.jsonl is empty", root / "train.jsonl")
    return {"records": counts}


def check_names(name: str, aliases: list[str] | None) -> None:
    """The checks publishing makes on the name and aliases (for a dry run)."""
    from nemo_runspec.artifacts.errors import ArtifactPublishError
    from nemo_runspec.artifacts.refs import ALIAS_RE, NAME_RE, version_number

    if not NAME_RE.match(name):
        raise ArtifactPublishError(f"invalid artifact name {name!r}", hint="letters, digits, '.', '_' and '-'")
    for alias in aliases or []:
        if not ALIAS_RE.match(alias) or version_number(alias) is not None:
            raise ArtifactPublishError(f"invalid alias {alias!r}", key=name,
                                       hint="aliases start with a letter and are not version numbers")


CHECKS: dict[str, Callable[[Path], dict[str, Any]]] = {
    "pretrain": check_pretrain,
    "sft": check_sft,
    "rl": check_rl,
}


def global_context() -> Any:
    """The running command's :class:`~nemo_runspec.cmdline.context.GlobalContext` (the global
    options), or None outside ``nemotron``. Typer 0.29 runs commands on its own copy of
    click, whose context stack is not ``click``'s."""
    from nemo_runspec.cmdline.context import GlobalContext

    getters = []
    try:
        from typer._click.globals import get_current_context as typer_context

        getters.append(typer_context)
    except ImportError:  # a Typer that uses click itself
        pass
    import click

    getters.append(click.get_current_context)
    for get in getters:
        ctx = get(silent=True)
        root = ctx.find_root().obj if ctx is not None else None
        if isinstance(root, GlobalContext):
            return root
    return None


def dry_run_requested() -> bool:
    """True when the command line has the global ``-d/--dry-run``."""
    root = global_context()
    return bool(root is not None and root.dry_run)


def next_version(registry: Any, name: str) -> int | None:
    """The version number a publish of ``name`` would get (None when the registry cannot say)."""
    try:
        return max((a.version for a in registry.versions(name)), default=0) + 1
    except Exception:  # noqa: BLE001 - a dry run only shows it
        return None


def command_registry() -> Any:
    """The artifact registry of the running command: its env.toml (``--env-file``,
    ``$NEMOTRON_ENV_FILE`` or the nearest one), read once."""
    from nemo_runspec.artifacts.registry import registry_for
    from nemo_runspec.env import find_env_file, load_env_file, read_sections

    root = global_context()
    path = find_env_file(root.env_file if root is not None else None)
    return registry_for(read_sections(load_env_file(path) if path else None))


def import_data(kind: str, path: Path, *, name: str | None = None, copy: bool = False,
                aliases: list[str] | None = None, registry: Any = None, dry_run: bool = False) -> Any:
    """Validate ``path`` as ``kind`` data and publish it to ``registry``
    (default: :func:`~nemo_runspec.artifacts.registry.get_registry`).

    ``latest`` always moves to the new version; ``aliases`` are added to it.
    Returns the published :class:`~nemo_runspec.artifacts.registry.Artifact`;
    with ``dry_run`` only checks and returns the metadata it would publish.
    """
    root = Path(path).expanduser()
    if not root.exists():
        raise _bad("no such directory", root)
    if not root.is_dir():
        raise _bad("not a directory", root, hint=f"pass the {kind} data directory")
    root = root.resolve()
    checked = check_pretrain(root, write=False) if dry_run and kind == "pretrain" else CHECKS[kind](root)
    from nemo_runspec.artifacts.registry import get_registry

    metadata = {**_source_metadata(root), **checked, "kind": kind, "imported_from": str(root)}
    if dry_run:
        return metadata
    all_aliases = ["latest", *[a for a in (aliases or []) if a != "latest"]]
    try:
        return (registry or get_registry()).publish(name or DEFAULT_NAMES[kind], root, metadata=metadata,
                                                    aliases=all_aliases, copy=copy)
    except BaseException:
        if checked.get("blend_generated"):  # a failed import leaves PATH as it found it
            Path(checked["blend_path"]).unlink(missing_ok=True)
        raise


def run_import(kind: str, path: Path, name: str | None, copy: bool, aliases: list[str] | None) -> None:
    """The body of each ``nemotron nano3 data import KIND`` command (the global
    ``--dry-run`` checks PATH and says what would be registered, writing nothing)."""
    dry_run = dry_run_requested()
    try:
        registry = command_registry()
        art = import_data(kind, path, name=name, copy=copy, aliases=aliases, registry=registry,
                          dry_run=dry_run)
        if dry_run:
            check_names(name or DEFAULT_NAMES[kind], aliases)
    except NemoRunspecError as exc:  # includes the registry's ArtifactError
        fail(exc)
        return
    if dry_run:
        target = name or DEFAULT_NAMES[kind]
        version = next_version(registry, target)
        shown = ", ".join(["latest", *[a for a in (aliases or []) if a != "latest"]])
        if art.get("blend_generated"):
            typer.echo(f"note: would write {art['blend_path']} (no blend.json is there)")
        typer.echo(f"dry run: {Path(path).expanduser().resolve()} is valid {kind} data; would register it as "
                   f"{target}{f':v{version}' if version else ''} (aliases: {shown}) "
                   f"{'as a copy' if copy else 'by reference'}; nothing was written")
        return
    if art.metadata.get("blend_generated"):
        typer.echo(f"note: wrote {art.metadata['blend_path']} (no blend.json was there)")
    typer.echo(f"artifact: {art.ref}  (aliases: {', '.join(art.aliases) or '-'})")
    typer.echo(f"path: {art.path}")
