"""`nemotron`: the main app and console entry point.

Global options are pulled out of argv (:func:`split_global_args`) before Typer
sees it, so they work before or after the subcommand. ``nemotron --help`` lists
the command groups from :data:`GROUPS` (name and one-line help) without
importing them; a group is imported when it is invoked or its own help is
asked for, and one whose import fails is reported then: one line, exit 1 (its
own error, exit 2, when it is a broken runspec). Recipe scripts without a
command file get a generated one (:mod:`nemotron.cli.discovered`), added to the
group their runspec name starts with (or a new one, listed by ``--help``).
"""

from __future__ import annotations

import importlib
import os
import sys
import traceback
from collections.abc import Sequence
from typing import Any, NoReturn

import typer

from nemo_runspec.cli.recipe_typer import RECIPE_CONTEXT_SETTINGS, FastHelpGroup
from nemo_runspec.cmdline.context import GlobalContext, split_global_args
from nemo_runspec.errors import ExecutionError, NemoRunspecError, set_debug

#: name -> (module, attribute holding a typer.Typer or a click command, optional,
#: one-line help). ``nemotron --help`` shows the one-line help without importing
#: the module (``tests/nemotron/cli/test_root_help.py`` checks that it is the
#: group's own). An entry of three items (no help) or an optional one is
#: imported to be listed; an optional group whose module does not exist is left
#: out. Every other import failure is reported when the group is used.
GROUPS: dict[str, tuple[Any, ...]] = {
    "nano3": ("nemotron.cli.commands.nano3._typer_group", "app", False,
              "Nemotron 3 Nano recipes: data prep, pretrain, sft, convert, rl, evaluation, model import and the whole chain (pipe)."),
    "evaluate": ("nemotron.cli.commands.evaluate", "app", False,
                 "Evaluate MODEL: an artifact or a checkpoint path (NeMo Evaluator; the CPU fallback "
                 "for tiny models)."),
    "runspec": ("nemotron.cli.commands.runspec", "app", False,
                "Inspect and validate the \\[tool.runspec] metadata of recipe scripts."),
    "env": ("nemotron.cli.commands.env", "app", False,
            "Inspect env.toml execution profiles (used by --run/--batch). The file is the global "
            "--env-file, else $NEMOTRON_ENV_FILE, else the nearest env.toml from the current "
            "directory up to the project root."),
    "kit": ("nemotron.cli.kit", "app", False,
            "Kit utilities: preflight checks of a profile, image squashing."),
    "jobs": ("nemotron.cli.commands.jobs", "app", False,
             "List, inspect, follow and cancel the Slurm jobs and pipes submitted from here "
             "(recorded in $NEMOTRON_HOME/jobs/submissions.jsonl)."),
    "steps": ("nemotron.cli.commands.steps", "app", False,
              "The registered pipeline steps: list them, show one, run one."),
    "run": ("nemotron.cli.commands.run", "app", False,
            "Run any script with a [tool.runspec] block (no CLI code needed)."),
    "report": ("nemotron.cli.commands.report", "app", False,
               "Write one self-contained HTML report of a job, a pipe or several jobs (a sweep): loss and "
               "throughput per attempt, the timeline, the job's identity."),
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

    Using it (running it or asking for its help) raises ``error`` itself when it
    is one of ours (a broken runspec is exit 2 with its file and line), else an
    ``ExecutionError`` (exit 1): :meth:`NemotronGroup.resolve_command` raises
    :attr:`load_error`. Group listings of a group without one-line help in
    :data:`GROUPS` show it as ``failed to load: ...``.
    """
    message = f"failed to load: {type(error).__name__}: {error}"
    stub = typer.Typer(add_completion=False)
    load_error = error if isinstance(error, NemoRunspecError) else ExecutionError(f"command group '{name}' {message}")

    @stub.command(name=name, help=message, context_settings=dict(RECIPE_CONTEXT_SETTINGS))
    def failed(ctx: typer.Context) -> None:
        raise load_error

    command = typer.main.get_command(stub)
    command.name = name
    command.load_error = load_error
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
        module_name, attr, optional = GROUPS[name][:3]
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
                self._defer_attach(command, name)
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

    def _defer_attach(self, group: Any, name: str) -> None:
        """Add the commands of recipes found under ``name`` to ``group``: when it first
        looks up a name it does not have (or lists its commands), so that running
        one of its own commands (``nemotron nano3 pretrain``) does not search the
        recipe dirs; at once for a group that is not a :class:`FastHelpGroup`. A
        recipe that cannot become a command there (its path runs through a
        command) is a ``warning:`` line then."""
        root = self

        def attach_found() -> None:
            from nemotron.cli.discovered import attach, discovery_for, report

            found = discovery_for(root._root_ctx)
            known = len(found.problems)
            attach(group, (name,), found)
            if len(found.problems) > known:
                report(found)

        if isinstance(group, FastHelpGroup):
            group.before_lookup = attach_found
        else:
            attach_found()

    def listed_help(self, name: str) -> str | None:
        """The one-line help of :data:`GROUPS` that lists ``name`` without importing it
        (None: the group is to be imported to be listed, or already is)."""
        entry = GROUPS.get(name)
        if entry is None or len(entry) < 4 or entry[2] or name in self._loaded or name in self.commands:
            return None
        return entry[3]

    def list_commands(self, ctx: typer.Context) -> list[str]:
        """Eager commands, every registered group (those without one-line help if they
        load or failed to), then the groups and commands of recipes found without a
        command file."""
        self._root_ctx = ctx
        names = list(super().list_commands(ctx))
        for name in GROUPS:
            if name not in names and (self.listed_help(name) is not None or self._load(name) is not None):
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
                known = len(found.problems)
                command = build_top_level(cmd_name, found)
                self.add_command(command, cmd_name)
                if len(found.problems) > known:  # a name found twice: said where its command is made
                    from nemotron.cli.discovered import report

                    report(found)
        return command

    def resolve_command(self, ctx: typer.Context, args: list[str]) -> Any:
        """Click's lookup; an unknown command also reports the recipe dirs' problems
        (a recipe dir that does not exist may be why), and a group that failed to
        import raises its error (one line) whatever follows it, ``--help`` included."""
        try:
            name, command, rest = super().resolve_command(ctx, args)
        except Exception:
            from nemotron.cli.discovered import discovery_for, report

            report(discovery_for(ctx))
            raise
        load_error = getattr(command, "load_error", None)
        if load_error is not None:
            raise load_error
        return name, command, rest

    def format_help(self, ctx: typer.Context, formatter: Any) -> None:
        """Usage, the groups (from :data:`GROUPS`, not imported) and the recipes' groups,
        options and global options; a warning on stderr for each problem finding
        recipe scripts (and each group that is imported to be listed and fails)."""
        from nemo_runspec.cli.help import command_rows, global_options_panel, group_help_blocks
        from nemo_runspec.cli.panels import print_blocks
        from nemotron.cli.discovered import discovery_for, report

        listed = {name: text for name in GROUPS if (text := self.listed_help(name)) is not None}
        rows = command_rows(self, ctx, listed)
        report(discovery_for(ctx))
        print_blocks([*group_help_blocks(ctx, self.help or "", rows), global_options_panel()])

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
            from nemo_runspec.runtime.signals import install

            install()  # SIGTERM and SIGHUP clean up like Ctrl-C
        from nemo_runspec.paths import pin_relative_places

        pin_relative_places()  # a relative NEMOTRON_ARTIFACTS_ROOT means one place for every stage
        try:
            gctx, rest = split_global_args(argv)
            debug = debug or gctx.debug
            set_debug(debug)  # the library's summaries fold nothing with --debug
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
            print(f"error: {_shown(exc)}", file=sys.stderr)
            if not standalone_mode:
                raise
            sys.exit(_exit_code(exc))
        except KeyboardInterrupt as exc:  # Ctrl-C, or SIGTERM/SIGHUP (nemo_runspec.runtime.signals)
            from nemo_runspec.runtime.signals import exit_code

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
                print(f"error: {_shown(_unexpected(exc))} "
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
            print(f"error: {_shown(exc.format_message())} (see '{where} --help')", file=sys.stderr)
            sys.exit(exc.exit_code)
        if not standalone_mode:
            return rv
        from nemo_runspec.runtime.signals import received

        if rv == 130 and (sig := received()) is not None:
            # Typer turns a KeyboardInterrupt (ours for SIGTERM/SIGHUP too) into exit 130
            import signal as _signal

            print(f"interrupted ({_signal.Signals(sig).name})", file=sys.stderr)
            sys.exit(128 + sig)
        # Typer returns the code of a typer.Exit here; a command's own return value
        # is not an exit status unless it is an int (same as Click's standalone mode).
        sys.exit(rv if isinstance(rv, int) else 0)


def _shown(message: object) -> str:
    """An error line as printed: no credential-shaped value, whoever wrote the message (a YAML
    parser quoting a bad override, Slurm, click)."""
    from nemo_runspec.secrets import redact_shapes

    return redact_shapes(str(message))


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
    """``nemotron [GLOBAL OPTIONS] COMMAND ...``; ends with ``SystemExit`` (the exit code)."""
    return app(args=None if argv is None else list(argv), prog_name="nemotron")


def console_main() -> NoReturn:
    """The ``nemotron`` console script: :func:`main`, and for a help page or a launch
    (``--dry-run``, ``--batch``, ``--run``) a quick end of the process.

    After ``main`` returns, Python's own shutdown tears down every module and frees
    every object: 0.15-0.3 s after a Slurm dry run or submission (nemo-run,
    OmegaConf and pydantic bring some 900 modules), 10-15 ms after a help page:
    a fifth of what a dry run may take, a tenth of a help page. For those commands
    this does what an exit must still do, in the interpreter's order: threading's
    exit callbacks and a join of the threads that are not daemons
    (``threading._shutdown``), the ``atexit`` handlers (logging flushes its
    handlers, paramiko joins its transport threads, weakref finalizers such as a
    ``TemporaryDirectory``'s clean-up run), flushes stdout and stderr; then
    ``os._exit``. What it skips, destructors of objects still alive and module
    teardown, is nothing these commands rely on: they write their files in
    ``with`` blocks. Every other command (a local run, data prep, ``jobs``) exits
    the usual way, and so does everything that calls :func:`main` itself (the
    tests, in-process through CliRunner or in a subprocess): only this entry
    point, the last frame of the process, ends it early.
    """
    try:
        main()
        code: Any = 0
    except SystemExit as exc:
        code = exc.code
    if not _quick_exit_allowed(sys.argv[1:]):
        sys.exit(code)
    if code is None:
        status = 0
    elif isinstance(code, int):
        status = code & 0xFF
    else:  # as sys.exit(): the object printed on stderr, status 1
        print(code, file=sys.stderr)
        status = 1
    import atexit
    import threading

    # What Py_FinalizeEx does first: threading's own exit callbacks (which tell idle
    # concurrent.futures workers to stop), then a join of every non-daemon thread.
    # (CPython's own function for it, as every CPython since 3.0 has.)
    threading._shutdown()  # type: ignore[attr-defined]
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:
                stream.flush()
        except (OSError, ValueError):  # e.g. `nemotron ... | head`: as Python's own exit, status 120
            status = status or 120
    os._exit(status)


def _quick_exit_allowed(argv: list[str]) -> bool:
    """True for a help page or a launch: see :func:`console_main`."""
    try:
        gctx, rest = split_global_args(argv)
    except NemoRunspecError:
        return False
    if not rest or "-h" in rest or "--help" in rest:
        return True
    return gctx.dry_run or gctx.run is not None or gctx.batch is not None


if __name__ == "__main__":
    main()
