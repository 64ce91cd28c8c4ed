"""RecipeMeta: what a recipe command's ``--help`` shows about its recipe.

A command states it once, in its own docstring, read by :meth:`RecipeMeta.from_spec`::

    def pretrain(ctx: typer.Context) -> int:
        \"\"\"Pretrain Nemotron 3 Nano with Megatron-Bridge (torchrun).

        Any prose paragraphs (not shown in the help panels).

        Consumes:
            data: tokenized pretraining corpus (run.data)
        Produces:
            model: pretrained checkpoint (checkpoint.save)
        Examples:
            nemotron nano3 pretrain -c tiny --dry-run
        \"\"\"

The first line is the description; ``Consumes:``, ``Produces:`` and
``Examples:`` sections (any order, each optional) fill the artifact and example
panels. The recipe's name, script, config dir and default config come from its runspec.
"""

from __future__ import annotations

import inspect
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from nemo_runspec.spec.models import Runspec

SECTIONS = ("Consumes", "Produces", "Examples")


@dataclass(frozen=True)
class RecipeMeta:
    """What a recipe command's ``--help`` shows about its recipe.

    Attributes:
        name: command name (``pretrain``); a recipe name such as ``nano3/pretrain``
            is accepted, the last part becomes the command name.
        script_path: path of the recipe script.
        config_dir: path of its config directory (``*.yaml`` are listed).

    Both may be strings (the reference passes repository-relative ones such as
    ``"src/nemotron/recipes/nano3/stage0_pretrain/config"``); they are made absolute:
    a relative path against the current directory when it exists there (where the
    reference runs its CLI from), else against the nearest directory above the
    script that holds it (the repository), else it stays as written.
        default_config: name of the config used without ``-c``.
        input_artifacts: artifact name -> description of what the recipe consumes.
        output_artifacts: artifact name -> description of what it produces.
        examples: command lines shown under "Examples".
        description: one paragraph shown under the usage line.
    """

    name: str
    script_path: Path
    config_dir: Path
    default_config: str = "default"
    input_artifacts: dict[str, str] = field(default_factory=dict)
    output_artifacts: dict[str, str] = field(default_factory=dict)
    examples: list[str] = field(default_factory=list)
    description: str = ""

    def __post_init__(self) -> None:
        script = _absolute(self.script_path, None)
        object.__setattr__(self, "script_path", script)
        object.__setattr__(self, "config_dir", _absolute(self.config_dir, script))

    @property
    def command_name(self) -> str:
        """The last part of :attr:`name`, used as the CLI command name."""
        return self.name.rsplit("/", 1)[-1]

    @classmethod
    def from_spec(cls, spec: Runspec, doc: str | None = None) -> RecipeMeta:
        """The meta of the recipe whose parsed runspec is ``spec``, described by ``doc``
        (a command's docstring, see the module docstring)."""
        description, sections = parse_command_doc(doc or "")
        return cls(
            name=spec.name,
            script_path=spec.script_path,
            config_dir=spec.config_dir,
            default_config=spec.config.default,
            input_artifacts=_pairs(sections.get("Consumes", [])),
            output_artifacts=_pairs(sections.get("Produces", [])),
            examples=sections.get("Examples", []),
            description=description,
        )


def parse_command_doc(doc: str) -> tuple[str, dict[str, list[str]]]:
    """``(first line, {section: [item lines]})`` of a command docstring."""
    lines = inspect.cleandoc(doc).splitlines()
    description = lines[0].strip() if lines else ""
    sections: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in lines[1:]:
        header = line.strip().rstrip(":")
        if line and not line[0].isspace() and line.rstrip().endswith(":") and header in SECTIONS:
            current = sections.setdefault(header, [])
        elif current is not None and line.startswith((" ", "\t")) and line.strip():
            current.append(line.strip())
        elif line.strip():
            current = None
    return description, sections


def _pairs(items: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in items:
        name, _, text = item.partition(":")
        out[name.strip()] = text.strip()
    return out


def _absolute(path: str | os.PathLike[str], script: Path | None) -> Path:
    """``path`` made absolute (see :class:`RecipeMeta`)."""
    p = Path(path).expanduser()
    if p.is_absolute() or p.exists():
        return p.absolute()
    if script is not None and script.is_absolute():
        for base in script.parents:
            if (base / p).exists():
                return base / p
    return p
