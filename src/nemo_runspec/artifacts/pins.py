"""Pinned inputs: which exact version a job consumes when its config says ``:latest``.

``:latest`` moves whenever anyone publishes. Two pipes at once on one registry
would then mix: one pipe's SFT trained on the other pipe's pretraining. A
pipeline therefore hands each stage's job its pins in ``$NEMOTRON_ARTIFACT_PINS``
(JSON ``{artifact name: pin}``):

- ``"v3"``: that version (an input from outside the pipe, as it was when the
  pipe started; or the output of a stage skipped because it exists);
- ``"pipe:<pipe id>:<pipe key>"``: the version this pipe's producing stage
  published (the newest whose metadata carries that pipe id and key).

A reference that names a version itself (``name:v2``) is never re-pinned. Every
reference a process resolves is remembered (:func:`consumed`), and what it
publishes records them under ``inputs`` in its metadata, so each version says
exactly what it was made from.

A job Slurm may requeue resolves ``:latest`` once: with ``$NEMOTRON_ARTIFACT_PIN_FILE``
set (by the training entry, :func:`nemotron.training.entry.main`, inside a Slurm job),
the first attempt records each reference's exact version in that file, and a later
attempt of the same job reads it back, so a run resumed from its checkpoint goes on
with the data it started with, whatever was published meanwhile.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

from nemo_runspec.artifacts.errors import ArtifactError
from nemo_runspec.artifacts.refs import Artifact, parse_ref, version_number

PINS_ENV = "NEMOTRON_ARTIFACT_PINS"
#: a JSON file ``{name:alias: name:vN}`` this job's attempts share (see the module docstring)
PIN_FILE_ENV = "NEMOTRON_ARTIFACT_PIN_FILE"
#: stands for the pipe id in a pin made before the pipe has one (replaced in the job's environment)
PIPE_ID_SLOT = "{pipe}"

_CONSUMED: dict[str, str] = {}


class Versions(Protocol):
    """What :func:`resolve` reads of a registry; an
    :class:`~nemo_runspec.artifacts.registry.ArtifactRegistry` has both. Named by its shape, not
    imported: the registry imports this module (a publish records :func:`consumed`)."""

    def resolve(self, ref: str) -> Artifact:
        """The version ``ref`` (``name``, ``name:vN`` or ``name:alias``) names."""
        ...

    def versions(self, name: str) -> list[Artifact]:
        """Every version of ``name``, oldest first."""
        ...


def from_env(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The pins this process was given (empty when none; a malformed value is an error)."""
    text = (os.environ if environ is None else environ).get(PINS_ENV, "")
    if not text:
        return {}
    try:
        pins = json.loads(text)
        if not isinstance(pins, dict) or not all(isinstance(v, str) for v in pins.values()):
            raise ValueError("not an object of strings")
    except ValueError as exc:
        raise ArtifactError(f"${PINS_ENV} is not a JSON object of pins ({exc})", key=PINS_ENV) from None
    return pins


def for_pipe(pins: Mapping[str, str], pipe_id: str) -> dict[str, str]:
    """``pins`` with :data:`PIPE_ID_SLOT` replaced by ``pipe_id``."""
    return {name: pin.replace(PIPE_ID_SLOT, pipe_id) for name, pin in pins.items()}


def resolve(registry: Versions, ref: str, pins: Mapping[str, str] | None = None) -> Artifact:
    """``registry.resolve(ref)``, with an alias of a pinned name replaced by its pin
    (default pins: :func:`from_env`); remembers what was consumed."""
    pins = from_env() if pins is None else pins
    name, selector = parse_ref(ref)
    pin = pins.get(name)
    if version_number(selector) is not None:
        art = registry.resolve(ref)
    elif pin is None:
        key = f"{name}:{selector}"  # `ds` and `ds:latest` are one reference
        earlier = _attempts_pins().get(key)
        art = registry.resolve(earlier if earlier else ref)
        if not earlier:
            _record_attempt_pin(key, art.ref)
    elif pin.startswith("pipe:"):
        art = _published_by(registry, name, pin)
    else:
        art = registry.resolve(f"{name}:{pin}")
    _CONSUMED[ref] = art.ref
    return art


def _attempts_pins() -> dict[str, str]:
    """What an earlier attempt of this job resolved (empty without a pin file, or before one)."""
    path = os.environ.get(PIN_FILE_ENV)
    if not path:
        return {}
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        raise ArtifactError(f"${PIN_FILE_ENV} ({path}) is not readable as JSON: {exc}",
                            key=PIN_FILE_ENV) from None
    return {str(k): str(v) for k, v in data.items()} if isinstance(data, dict) else {}


def _record_attempt_pin(ref: str, exact: str) -> None:
    """Add ``ref -> exact`` to the pin file (written whole, then renamed: never half a file)."""
    path = os.environ.get(PIN_FILE_ENV)
    if not path:
        return
    data = {**_attempts_pins(), ref: exact}
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(data, f, indent=1, sort_keys=True)
    os.replace(tmp, path)


def _published_by(registry: Versions, name: str, pin: str) -> Artifact:
    _, pipe_id, key = (pin.split(":", 2) + ["", ""])[:3]
    for art in reversed(registry.versions(name)):
        meta = art.metadata or {}
        if meta.get("pipe_id") == pipe_id and (not key or meta.get("pipe_key") == key):
            return art
    raise ArtifactError(f"{name}: the stage of pipe {pipe_id} that makes it has published no version",
                        key=name, hint="the stage that publishes it must finish first (it is pinned to this "
                                       f"pipe's own output: ${PINS_ENV})")


def consumed() -> dict[str, str]:
    """``{reference as written: exact name:vN}`` of every reference this process resolved."""
    return dict(_CONSUMED)


def stage_pins(consumes: Mapping[str, str], earlier: Sequence[Any], *,
               resolve: Callable[[str], Artifact | None], pin_inputs: bool = True) -> dict[str, str]:
    """The pins of a pipeline stage's inputs (``consumes``: ``{run key: reference}``), given
    the stages before it (``earlier``: each with ``publishes``, ``skip``, ``key``, ``output``):
    a producer of the pipe that runs gives ``pipe:{pipe}:<its key>``, a skipped one the
    version it stands on; any other input (with ``pin_inputs``) the version ``resolve`` gives now."""
    pins: dict[str, str] = {}
    for ref in consumes.values():
        name = parse_ref(ref)[0]
        producer = next((p for p in reversed(earlier) if p.publishes == name), None)
        if producer is not None:
            if not producer.skip:
                pins[name] = f"pipe:{PIPE_ID_SLOT}:{producer.key}"
            elif producer.output:
                pins[name] = producer.output.rpartition(":")[2]
        elif pin_inputs and (art := resolve(ref)) is not None:
            pins[name] = f"v{art.version}"
    return pins
