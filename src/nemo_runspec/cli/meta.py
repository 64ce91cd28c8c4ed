"""RecipeMeta: what a recipe command's ``--help`` shows about its recipe."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class RecipeMeta:
    """What a recipe command's ``--help`` shows about its recipe.

    Attributes:
        name: command name (``pretrain``); a recipe name such as ``nano3/pretrain``
            is accepted, the last part becomes the command name.
        script_path: absolute path of the recipe script.
        config_dir: absolute path of its config directory (``*.yaml`` are listed).
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

    @property
    def command_name(self) -> str:
        """The last part of :attr:`name`, used as the CLI command name."""
        return self.name.rsplit("/", 1)[-1]

    @classmethod
    def from_spec(
        cls,
        spec: Any,
        *,
        description: str,
        inputs: Mapping[str, str] | None = None,
        outputs: Mapping[str, str] | None = None,
        examples: Sequence[str] = (),
    ) -> RecipeMeta:
        """The meta of the recipe whose parsed runspec is ``spec``: its name, script,
        config dir and default config come from the runspec."""
        return cls(
            name=spec.name,
            script_path=spec.script_path,
            config_dir=spec.config_dir,
            default_config=spec.config.default,
            input_artifacts=dict(inputs or {}),
            output_artifacts=dict(outputs or {}),
            examples=list(examples),
            description=description,
        )
