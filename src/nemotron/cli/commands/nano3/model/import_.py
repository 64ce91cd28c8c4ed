"""`nemotron nano3 model import pretrain|sft|rl PATH`: register an existing checkpoint as the
model artifact the next stage consumes.

The same rules as ``nano3 data import``: the layout is checked first (a wrong
one is a one-line error, exit 2, nothing registered), then PATH is published to
the command's artifact registry as the next version of the stage's model
artifact, by reference (``--copy``: copied into the registry); ``latest`` always
moves, ``--alias`` adds more; the global ``--dry-run`` checks and says what
would be registered, writing nothing.

Layouts (the first that fits):

megatron   ``latest_checkpointed_iteration.txt`` (an iteration number or
           ``release``) naming an ``iter_NNNNNNN/`` (or ``release/``) dir, or only
           ``iter_*/`` dirs: then the tracker file is written for the highest
           one (a note says so; removed again if the publish fails), since
           Megatron loads the iteration that file names.
hf         Hugging Face: ``config.json`` and weights, ``*.safetensors`` or
           ``pytorch_model*.bin`` (every shard a ``*.index.json`` names present;
           a Git LFS pointer or a file that is not safetensors/torch is an error).
fallback   the CPU fallback trainer's ``step_<N>.pt`` files
           (:mod:`nemotron.training.checkpoint`); the newest is read (with torch,
           ``weights_only``) and must have been written by the same stage.

Default names are what the configs' ``run.model`` consume: ``nano3-<stage>-model``,
``nano3-<stage>-model-tiny`` for a fallback checkpoint (only the ``tiny`` configs run
the fallback that reads it) and ``nano3-sft-model-hf`` for a Hugging Face SFT model
(what ``nano3 rl`` starts from). The artifact's metadata records the format
(``megatron-dist``, ``hf``, ``fallback-pt``; :mod:`nemotron.training.formats`), which
the consuming stage checks before it starts.
"""

# No `from __future__ import annotations`: Typer reads the parameter annotations.

import json
import os
import re
import struct
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer

from nemo_runspec.cli.recipe_typer import FastHelpGroup
from nemo_runspec.errors import CLIUsageError, NemoRunspecError
from nemo_runspec.files import read_text
from nemotron.cli.commands.nano3.data.import_._common import (
    PlainParamsCommand,
    check_names,
    command_registry,
    dry_run_requested,
    fail,
    next_version,
)

KINDS = ("pretrain", "sft", "rl")
DEFAULT_NAMES = {kind: f"nano3-{kind}-model" for kind in KINDS}
#: what the fallback trainer calls each stage (``task`` in its checkpoints)
FALLBACK_TASKS = {"pretrain": ("pretrain",), "sft": ("sft",), "rl": ("rl-smoke", "rl")}
TRACKER = "latest_checkpointed_iteration.txt"
EXPECTED = ("a Megatron checkpoint (latest_checkpointed_iteration.txt or iter_*/ dirs), "
            "a Hugging Face model (config.json + *.safetensors or pytorch_model*.bin), "
            "or a fallback checkpoint (step_*.pt)")
_ITER = re.compile(r"^iter_(\d+)$")
_STEP = re.compile(r"^step_(\d+)\.pt$")
_LFS = b"version https://git-lfs"
#: who reads each stage's model, for a note when the format will not suit it
CONSUMERS = {
    ("pretrain", "hf"): "nano3 sft's Megatron-Bridge backend starts from a Megatron checkpoint "
                        "(checkpoint.pretrained_checkpoint); convert the Hugging Face model first",
    ("sft", "megatron-dist"): "nano3 rl's NeMo-RL backend loads a Hugging Face model (policy.model_name): "
                              "`nemotron nano3 convert` exports this checkpoint to nano3-sft-model-hf",
}


def default_name(kind: str, fmt: str) -> str:
    """``nano3-<kind>-model``; ``-tiny`` for the CPU fallback's checkpoints, ``-hf`` for a Hugging
    Face SFT model (what nano3 rl starts from)."""
    return DEFAULT_NAMES[kind] + {"fallback-pt": "-tiny", "hf": "-hf" if kind == "sft" else ""}.get(fmt, "")


def _bad(problem: str, path: Path, hint: str | None = None, line: int | None = None) -> CLIUsageError:
    return CLIUsageError(problem, path=path, line=line, hint=hint)


def _size(root: Path) -> int:
    return sum(p.stat().st_size for p in root.rglob("*") if p.is_file() and not p.is_symlink())


# --------------------------------------------------------------------------- layouts


def detect_layout(root: Path) -> str | None:
    """``megatron``, ``hf``, ``fallback`` or None."""
    if (root / TRACKER).is_file() or any(_ITER.match(p.name) and p.is_dir() for p in root.iterdir()):
        return "megatron"
    if os.path.lexists(root / "config.json"):  # reading it says when it is no regular file
        return "hf"
    if any(_STEP.match(p.name) and p.is_file() for p in root.iterdir()):
        return "fallback"
    return None


def _iterations(root: Path) -> dict[int, Path]:
    return {int(m.group(1)): p for p in root.iterdir() if (m := _ITER.match(p.name)) and p.is_dir()}


def _nonempty_dir(d: Path, tracker: Path) -> None:
    if not d.is_dir():
        raise _bad(f"names {d.name}/, which is missing", tracker,
                   hint="point the tracker file at an existing iteration, or delete it")
    if not any(d.iterdir()):
        raise _bad(f"{d.name}/ is empty", d.parent, hint="the checkpoint was not (completely) saved")


def check_megatron(root: Path, *, write: bool = True) -> dict[str, Any]:
    """A Megatron checkpoint dir; writes the tracker file for a dir of bare ``iter_*``
    dirs (unless ``write`` is false). Returns metadata."""
    tracker = root / TRACKER
    iters = _iterations(root)
    generated = False
    if tracker.is_file():
        text = read_text(tracker, what="tracker file", error=CLIUsageError).strip()
        if text == "release":
            iteration: int | str = "release"
            _nonempty_dir(root / "release", tracker)
        elif text.isdigit():
            iteration = int(text)
            target = root / f"iter_{iteration:07d}"
            if not target.is_dir() and iteration in iters:
                target = iters[iteration]
            _nonempty_dir(target, tracker)
        else:
            raise _bad(f"holds {text[:40]!r}, not an iteration number or 'release'", tracker, line=1)
    else:
        iteration = max(iters)
        _nonempty_dir(iters[iteration], root / iters[iteration].name)
        if write:
            tracker.write_text(f"{iteration}\n", encoding="utf-8")
        generated = True
    return {"format": "megatron-dist", "iteration": iteration, "iterations": sorted(iters),
            "tracker_path": str(tracker), "tracker_generated": generated, "bytes": _size(root)}


def _check_weight_file(f: Path) -> None:
    try:
        with open(f, "rb") as fh:
            head = fh.read(64 * 1024)
    except OSError as exc:
        raise _bad(f"cannot read: {exc.strerror or exc}", f) from None
    if head.startswith(_LFS):
        raise _bad("is a Git LFS pointer, not the weights", f, hint="fetch them with `git lfs pull`")
    if f.suffix == ".safetensors":
        size = f.stat().st_size
        n = struct.unpack("<Q", head[:8])[0] if len(head) >= 8 else 0
        ok = 2 <= n <= min(size - 8, 100 * 1024 * 1024)
        if ok:
            with open(f, "rb") as fh:
                fh.seek(8)
                try:
                    ok = isinstance(json.loads(fh.read(n)), dict)
                except (ValueError, UnicodeDecodeError):
                    ok = False
        if not ok:
            raise _bad("not a safetensors file (no valid header)", f, hint="the download may be incomplete")
    elif not (head.startswith(b"PK\x03\x04") or head[:1] == b"\x80"):
        raise _bad("not a PyTorch weights file (neither a zip archive nor a pickle)", f)


def check_hf(root: Path, *, write: bool = True) -> dict[str, Any]:
    """A Hugging Face model dir: config.json plus its weights. Returns metadata."""
    cfg_path = root / "config.json"
    try:
        config = json.loads(read_text(cfg_path, what="config.json", error=CLIUsageError))
    except json.JSONDecodeError as exc:
        raise _bad(f"invalid JSON: {exc.msg}", cfg_path, line=exc.lineno) from None
    if not isinstance(config, dict):
        raise _bad("must be a JSON object", cfg_path)
    weights = sorted({*root.glob("*.safetensors"), *root.glob("pytorch_model*.bin")})
    weights = [w for w in weights if w.is_file()]
    for index_name in ("model.safetensors.index.json", "pytorch_model.bin.index.json"):
        index = root / index_name
        if not index.is_file():
            continue
        try:
            shards = set((json.loads(read_text(index, what="shard index", error=CLIUsageError))
                          .get("weight_map") or {}).values())
        except (ValueError, AttributeError):
            raise _bad("not a shard index (no weight_map)", index) from None
        missing = sorted(s for s in shards if not (root / str(s)).is_file())
        if missing:
            raise _bad(f"names {len(missing)} missing shard(s): {', '.join(missing[:3])}", index,
                       hint="the download is incomplete")
    if not weights:
        raise _bad("config.json but no weights (*.safetensors or pytorch_model*.bin)", root,
                   hint=f"expected {EXPECTED}")
    for w in weights:
        _check_weight_file(w)
    tokenizer = any((root / f).is_file() for f in ("tokenizer.json", "tokenizer.model", "tokenizer_config.json"))
    return {"format": "hf", "model_type": config.get("model_type"), "architectures": config.get("architectures"),
            "weight_files": len(weights), "weight_bytes": sum(w.stat().st_size for w in weights),
            "tokenizer": tokenizer}


def check_fallback(root: Path, kind: str) -> dict[str, Any]:
    """The CPU fallback trainer's checkpoints; the newest must be readable and of stage ``kind``."""
    from nemotron.training.checkpoint import list_checkpoints

    found = list_checkpoints(root)
    step, latest = found[-1]
    meta: dict[str, Any] = {"format": "fallback-pt", "step": step, "steps": [s for s, _ in found],
                            "checkpoint": latest.name, "bytes": sum(p.stat().st_size for _, p in found)}
    try:
        import torch
    except ImportError:  # nothing to read it with here: the file must at least be a torch archive
        import zipfile

        if not zipfile.is_zipfile(latest):
            raise _bad("not a torch checkpoint (not a zip archive)", latest) from None
        return meta
    try:
        state = torch.load(latest, map_location="cpu", weights_only=True)
    except Exception as exc:  # noqa: BLE001 - torch raises many types for a bad file
        raise _bad(f"cannot be read as a torch checkpoint: {str(exc).splitlines()[0][:200]}", latest) from None
    if not isinstance(state, dict) or "model" not in state:
        raise _bad("is not a fallback trainer checkpoint (no 'model' state)", latest)
    task = state.get("task")
    if task is not None and task not in FALLBACK_TASKS[kind]:
        other = next((k for k, tasks in FALLBACK_TASKS.items() if task in tasks), None)
        raise _bad(f"was written by the {task} stage, not {kind}", latest,
                   hint=f"import it with `nemotron nano3 model import {other} ...`" if other else None)
    meta.update(task=task, model_config=state.get("model_config"), tokens=state.get("tokens"))
    return meta


def _not_a_checkpoint(root: Path) -> CLIUsageError:
    hint = f"expected {EXPECTED}"
    if _ITER.match(root.name) and detect_layout(root.parent) == "megatron":
        hint = f"this is one iteration of a Megatron checkpoint: pass its parent {root.parent}"
    else:
        inner = [p for p in sorted(root.iterdir()) if p.is_dir() and not p.name.startswith(".")]
        found = next((p for p in inner if detect_layout(p) is not None), None)
        if found is not None:
            hint = f"did you mean {found}? ({detect_layout(found)} checkpoint)"
    return _bad("not a model checkpoint", root, hint=hint)


def check_model(kind: str, root: Path, *, write: bool = True) -> dict[str, Any]:
    """The layout of ``root`` checked as a ``kind`` model; its metadata."""
    layout = detect_layout(root)
    if layout == "megatron":
        return check_megatron(root, write=write)
    if layout == "hf":
        return check_hf(root)
    if layout == "fallback":
        return check_fallback(root, kind)
    raise _not_a_checkpoint(root)


def import_model(kind: str, path: Path, *, name: str | None = None, copy: bool = False,
                 aliases: list[str] | None = None, registry: Any = None, dry_run: bool = False) -> Any:
    """Check ``path`` as a ``kind`` checkpoint and publish it to ``registry`` (default
    :func:`~nemo_runspec.artifacts.registry.get_registry`) as ``name`` (default
    :func:`default_name`). Returns the :class:`~nemo_runspec.artifacts.registry.Artifact`,
    or with ``dry_run`` the metadata it would publish (with ``name``)."""
    root = Path(path).expanduser()
    if not root.exists():
        raise _bad("no such directory", root)
    if not root.is_dir():
        raise _bad("not a directory", root, hint=f"pass the checkpoint directory: {EXPECTED}")
    root = root.resolve()
    try:
        metadata = check_model(kind, root, write=not dry_run)
    except OSError as exc:  # an unreadable dir or file under it
        raise _bad(f"cannot read: {exc.strerror or exc}", Path(exc.filename or root)) from None
    target = name or default_name(kind, metadata["format"])
    metadata = {**metadata, "kind": f"{kind}-model", "imported_from": str(root)}
    all_aliases = ["latest", *[a for a in (aliases or []) if a != "latest"]]
    try:
        check_names(target, all_aliases)
        if dry_run:
            return {**metadata, "name": target}
        from nemo_runspec.artifacts.registry import get_registry

        return (registry or get_registry()).publish(target, root, metadata=metadata, aliases=all_aliases,
                                                    copy=copy)
    except BaseException:
        if metadata.get("tracker_generated") and not dry_run:  # leave PATH as it was found
            Path(metadata["tracker_path"]).unlink(missing_ok=True)
        raise


def _describe(meta: Any) -> str:
    fmt = meta.get("format")
    if fmt == "megatron-dist":
        return f"Megatron checkpoint, iteration {meta.get('iteration')}"
    if fmt == "hf":
        kind = meta.get("model_type") or "model"
        return f"Hugging Face {kind}, {meta.get('weight_files')} weight file(s)"
    return f"fallback checkpoint, step {meta.get('step')}" + (f" ({meta['task']})" if meta.get("task") else "")


def run_import(kind: str, path: Path, name: str | None, copy: bool, aliases: list[str] | None) -> None:
    """The body of each ``nemotron nano3 model import KIND`` command."""
    dry_run = dry_run_requested()
    try:
        registry = command_registry()
        result = import_model(kind, path, name=name, copy=copy, aliases=aliases, registry=registry,
                              dry_run=dry_run)
    except NemoRunspecError as exc:  # includes the registry's ArtifactError
        fail(exc)
        return
    meta = result if dry_run else result.metadata
    note = CONSUMERS.get((kind, meta.get("format")))
    if dry_run:
        if meta.get("tracker_generated"):
            typer.echo(f"note: would write {meta['tracker_path']} (iteration {meta['iteration']}; it was missing)")
        version = next_version(registry, meta["name"])
        shown = ", ".join(["latest", *[a for a in (aliases or []) if a != "latest"]])
        typer.echo(f"dry run: {meta['imported_from']} is a {_describe(meta)}; would register it as "
                   f"{meta['name']}{f':v{version}' if version else ''} (aliases: {shown}) "
                   f"{'as a copy' if copy else 'by reference'}; nothing was written")
    else:
        if meta.get("tracker_generated"):
            typer.echo(f"note: wrote {meta['tracker_path']} (iteration {meta['iteration']}; it was missing)")
        typer.echo(f"artifact: {result.ref}  (aliases: {', '.join(result.aliases) or '-'})")
        typer.echo(f"path: {result.path}")
        typer.echo(f"checkpoint: {_describe(meta)}")
    if note:
        typer.echo(f"note: {note}")


app = typer.Typer(
    name="import",
    help="Register an existing checkpoint (Megatron, Hugging Face or the CPU fallback's) as the "
    "model artifact the next stage consumes.",
    cls=FastHelpGroup,
    no_args_is_help=True,
    add_completion=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)

_CONSUMER = {"pretrain": "nano3 sft", "sft": "nano3 rl", "rl": "an evaluation stage"}
_A = {"pretrain": "a pretrain", "sft": "an SFT", "rl": "an RL"}


def _import_command(kind: str) -> Callable[..., None]:
    """The ``model import KIND`` command."""

    def command(
        path: Annotated[Path, typer.Argument(metavar="PATH", show_default=False,
                                             help=f"Checkpoint directory of {_A[kind]} run.")],
        name: Annotated[
            str | None,
            typer.Option("--name", metavar="NAME", show_default=False,
                         help=f"Artifact name (default: {DEFAULT_NAMES[kind]}, or {DEFAULT_NAMES[kind]}-tiny "
                              "for a fallback checkpoint)."),
        ] = None,
        copy: Annotated[
            bool, typer.Option("--copy", help="Copy the checkpoint into the registry instead of recording its path.")
        ] = False,
        alias: Annotated[
            list[str] | None,
            typer.Option("--alias", metavar="ALIAS", show_default=False,
                         help="Extra alias for the new version (repeatable); 'latest' always moves."),
        ] = None,
    ) -> None:
        run_import(kind, path, name, copy, alias)

    command.__name__ = command.__qualname__ = kind
    command.__doc__ = (f"Check PATH as {_A[kind]} checkpoint (Megatron, Hugging Face or fallback) and register it "
                       f"as the next version of the model {_CONSUMER[kind]} reads (run.model).")
    return command


for _kind in KINDS:
    app.command(name=_kind, cls=PlainParamsCommand)(_import_command(_kind))

__all__ = ["DEFAULT_NAMES", "app", "check_model", "detect_layout", "import_model"]
