"""`nemotron`: the main app and console entry point.

Global options are pulled out of argv (:func:`split_global_args`) before Typer
sees it, so they work before or after the subcommand. Command groups are
imported lazily, when listed (``--help``) or invoked; a group whose import fails
is replaced by a stub that reports the error. Recipe scripts without a command
file get a generated one (:mod:`nemotron.cli.discovered`), added to the group
their runspec name starts with (or a new one).
"""

from __future__ import annotations

import importlib
import os
import sys
import traceback
from collections.abc import Sequence
from typing import Any

import typer

from nemo_runspec.cli.context import GlobalContext, split_global_args
from nemo_runspec.cli.recipe_typer import RECIPE_CONTEXT_SETTINGS, FastHelpGroup
from nemo_runspec.errors import ExecutionError, NemoRunspecError

#: name -> (module, attribute holding a typer.Typer, optional). Optional groups
#: whose module does not exist are skipped; every other failure shows a stub.
GROUPS: dict[str, tuple[str, str, bool]] = {
    "nano3": ("nemotron.cli.commands.nano3._typer_group", "app", False),
    "evaluate": ("nemotron.cli.commands.evaluate", "app", False),
    "runspec": ("nemotron.cli.commands.runspec", "app", False),
    "env": ("nemotron.cli.commands.env", "app", False),
    "kit": ("nemotron.cli.kit", "app", False),
    "jobs": ("nemotron.cli.commands.jobs", "app", False),
    "steps": ("nemotron.cli.commands.steps", "app", False),
    "run": ("nemotron.cli.commands.run", "app", False),
}


def _debug_requested(argv: Sequence[str]) -> bool:
    if os.environ.get("NEMOTRON_DEBUG", "").strip().lower() in ("1", "true", "yes", "on"):
        return True
    words = list(argv)
    if "--" in words:
        words = words[: words.index("--")]
    return "--debug" in words


def _exit_code(exc: NemoRunspecError) -> int:
    return 1 if isinstance(exc, ExecutionError) else 2


def _failed_group(name: str, error: BaseException) -> Any:
    """A stand-in command for a group that failed to import.

    Running it raises ``error`` itself when it is one of ours (a broken runspec
    is exit 2 with its file and line), else an ``ExecutionError`` (exit 1).
    """
    message = f"failed to load: {type(error).__name__}: {error}"
    stub = typer.Typer(add_completion=False)

    @stub.command(name=name, help=message, context_settings=dict(RECIPE_CONTEXT_SETTINGS))
    def failed(ctx: typer.Context) -> None:
        if isinstance(error, NemoRunspecError):
            raise error
        raise ExecutionError(f"command group '{name}' {message}")

    command = typer.main.get_command(stub)
    command.name = name
    return command


class NemotronGroup(FastHelpGroup):
    """Root group: global-option extraction, lazy groups and error handling."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._loaded: dict[str, Any] = {}
        self.load_errors: dict[str, str] = {}
        self._root_ctx: Any = None

    def _load(self, name: str) -> Any:
        if name in self._loaded:
            return self._loaded[name]
        module_name, attr, optional = GROUPS[name]
        command: Any
        try:
            module = importlib.import_module(module_name)
            if optional and getattr(module, "__file__", None) is None and not hasattr(module, attr):
                # An empty directory (namespace package): the group is not written yet.
                raise ModuleNotFoundError(f"No module named {module_name!r}", name=module_name)
            sub = getattr(module, attr)
            command = typer.main.get_command(sub) if isinstance(sub, typer.Typer) else sub
            command.name = name
            if hasattr(command, "commands") and name != "run":
                from nemotron.cli.discovered import attach, discovery_for

                attach(command, (name,), discovery_for(self._root_ctx))
        except Exception as exc:  # noqa: BLE001 - reported, not hidden
            if optional and isinstance(exc, ModuleNotFoundError) and exc.name == module_name:
                command = None
            else:
                if _debug_requested(sys.argv[1:]):
                    traceback.print_exc()
                self.load_errors[name] = f"{type(exc).__name__}: {exc}"
                command = _failed_group(name, exc)
        self._loaded[name] = command
        return command

    def list_commands(self, ctx: typer.Context) -> list[str]:
        """Eager commands, every registered group that loads (or failed to), then the
        groups and commands of recipes found without a command file."""
        self._root_ctx = ctx
        names = list(super().list_commands(ctx))
        for name in GROUPS:
            if name not in names and self._load(name) is not None:
                names.append(name)
        from nemotron.cli.discovered import discovery_for, top_level

        return names + top_level(discovery_for(ctx), set(names) | set(GROUPS))

    def get_command(self, ctx: typer.Context, cmd_name: str) -> Any:
        """Load the group ``cmd_name`` on first use (with its generated recipe commands);
        a name only recipes use is their generated group or command."""
        self._root_ctx = ctx
        if cmd_name in GROUPS and cmd_name not in self.commands:
            return self._load(cmd_name)
        command = super().get_command(ctx, cmd_name)
        if command is None and cmd_name not in GROUPS:
            from nemotron.cli.discovered import build_top_level, discovery_for

            found = discovery_for(ctx)
            if any(r.command_path[0] == cmd_name for r in found.recipes.values()):
                command = build_top_level(cmd_name, found)
                self.add_command(command, cmd_name)
        return command

    def resolve_command(self, ctx: typer.Context, args: list[str]) -> Any:
        """Click's lookup; an unknown command also reports the recipe dirs' problems
        (a recipe dir that does not exist may be why)."""
        try:
            return super().resolve_command(ctx, args)
        except Exception:
            from nemotron.cli.discovered import discovery_for, report

            report(discovery_for(ctx))
            raise

    def format_help(self, ctx: typer.Context, formatter: Any) -> None:
        """Group help (warns on stderr for each group that failed to load and each
        problem finding recipe scripts), then globals."""
        super().format_help(ctx, formatter)
        from nemotron.cli.discovered import discovery_for, report

        report(discovery_for(ctx))
        from nemo_runspec.cli.help import render_global_options

        render_global_options()

    def main(  # type: ignore[override]
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        """Split global options off ``args``, run Typer, turn our errors into exit codes."""
        argv = list(sys.argv[1:] if args is None else args)
        debug = _debug_requested(argv)
        if standalone_mode:
            from nemo_runspec.signals import install

            install()  # SIGTERM and SIGHUP clean up like Ctrl-C
        try:
            gctx, rest = split_global_args(argv)
            debug = debug or gctx.debug
            extra.setdefault("obj", gctx)
            rv = super().main(
                rest,
                prog_name=prog_name or "nemotron",
                complete_var=complete_var,
                standalone_mode=False,
                **extra,
            )
        except NemoRunspecError as exc:
            if debug:
                traceback.print_exc()
            print(f"error: {exc}", file=sys.stderr)
            if not standalone_mode:
                raise
            sys.exit(_exit_code(exc))
        except KeyboardInterrupt as exc:  # Ctrl-C, or SIGTERM/SIGHUP (nemo_runspec.signals)
            from nemo_runspec.signals import exit_code

            print(f"interrupted{f' ({exc})' if str(exc) else ''}", file=sys.stderr)
            if not standalone_mode:
                raise
            sys.exit(exit_code(exc))
        except Exception as exc:
            if not standalone_mode:
                raise
            if not _is_a(exc, "ClickException", "Abort"):
                # Not one of ours: still one line, the traceback only on request.
                if debug:
                    raise
                print(f"error: {_unexpected(exc)} "
                      "(unexpected; rerun with --debug for the traceback)", file=sys.stderr)
                sys.exit(1)
            if debug:
                traceback.print_exc()
            if _is_a(exc, "NoArgsIsHelpError"):
                exc.show()
                sys.exit(exc.exit_code)
            if _is_a(exc, "Abort"):
                print("aborted", file=sys.stderr)
                sys.exit(1)
            where = getattr(getattr(exc, "ctx", None), "command_path", None) or "nemotron"
            print(f"error: {exc.format_message()} (see '{where} --help')", file=sys.stderr)
            sys.exit(exc.exit_code)
        if not standalone_mode:
            return rv
        from nemo_runspec.signals import received

        if rv == 130 and (sig := received()) is not None:
            # Typer turns a KeyboardInterrupt (ours for SIGTERM/SIGHUP too) into exit 130
            import signal as _signal

            print(f"interrupted ({_signal.Signals(sig).name})", file=sys.stderr)
            sys.exit(128 + sig)
        # Typer returns the code of a typer.Exit here; a command's own return value
        # is not an exit status unless it is an int (same as Click's standalone mode).
        sys.exit(rv if isinstance(rv, int) else 0)


def _unexpected(exc: BaseException) -> str:
    """One line for an exception none of our layers turned into a NemoRunspecError:
    an OSError names its file first (``path: Permission denied``), as our errors do."""
    names = (str, bytes, os.PathLike)
    if isinstance(exc, OSError) and isinstance(exc.filename, names) and exc.strerror:
        where = os.fsdecode(exc.filename)
        if isinstance(exc.filename2, names):
            where += f" -> {os.fsdecode(exc.filename2)}"
        return f"{where}: {exc.strerror}"
    text = " ".join(str(exc).split()) or "no message"
    return f"{type(exc).__name__}: {text}"


def _is_a(exc: BaseException, *names: str) -> bool:
    """True when ``exc`` is a (vendored or real) Click exception of one of ``names``."""
    return any(cls.__name__ in names for cls in type(exc).__mro__)


app = typer.Typer(
    name="nemotron",
    cls=NemotronGroup,
    help="Launch Nemotron training recipes locally, on Slurm or on Ray.",
    no_args_is_help=True,
    add_completion=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


@app.callback()
def _root(ctx: typer.Context) -> None:
    """Launch Nemotron training recipes locally, on Slurm or on Ray.

    Overrides (key=value, +key=value, ~key) and script arguments follow the command;
    everything after -- goes to the script verbatim.
    """
    # Global options were already taken out of argv by NemotronGroup.main (they
    # are not Typer parameters: processing a typed Typer option imports pydantic,
    # which --help must not). Keep a context for direct invocations.
    if not isinstance(ctx.obj, GlobalContext):
        ctx.obj = GlobalContext()


def main(argv: Sequence[str] | None = None) -> Any:
    """Console entry point: ``nemotron [GLOBAL OPTIONS] COMMAND ...``."""
    return app(args=None if argv is None else list(argv), prog_name="nemotron")


if __name__ == "__main__":
    main()
