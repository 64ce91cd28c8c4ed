"""`nemotron run SCRIPT`: run any script with a ``[tool.runspec]`` block, with no CLI code.

``nemotron run path/to/train.py [-c CONFIG] [--run/--batch PROFILE] [--dry-run]
[OVERRIDES...] [-- ARGS...]`` is what a generated recipe command does
(:mod:`nemotron.cli.discovered`), for a script anywhere: its runspec says how it
launches (torchrun, direct, ray) and where its configs are. ``nemotron run
SCRIPT --help`` shows its recipe help panels.
"""

from __future__ import annotations

from typing import Any

from nemo_runspec.cli.help import FastHelpGroup

HELP = ("Run any script with a [tool.runspec] block (no CLI code needed).\n\n"
        "nemotron run SCRIPT [-c CONFIG] [--run PROFILE | --batch PROFILE] [--dry-run] "
        "[OVERRIDES...] [-- ARGS...]; nemotron run SCRIPT --help shows its configs, profiles "
        "and examples.")


class ScriptGroup(FastHelpGroup):
    """A group whose "subcommand" is the path of a recipe script."""

    def list_commands(self, ctx: Any) -> list[str]:
        """No fixed commands: any script path is one."""
        return []

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        """The recipe command of the script ``cmd_name``; a missing file, a directory or
        a script without a valid runspec is the one-line error naming it (exit 2)."""
        from nemo_runspec import parse
        from nemotron.cli.discovered import recipe_command

        parse(cmd_name)  # raises RunspecError (path:line: problem (hint)) before Click sees it
        return recipe_command(cmd_name, cmd_name)


app = ScriptGroup(name="run", help=HELP, no_args_is_help=True,
                  context_settings={"help_option_names": ["-h", "--help"]})
