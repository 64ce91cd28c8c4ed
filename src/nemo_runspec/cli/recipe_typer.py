"""RecipeTyper: a Typer app that registers recipe commands with rich help panels."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import typer

from nemo_runspec.cli.help import (
    FastHelpCommand,
    FastHelpGroup,
    FastHelpMixin,
    recipe_command_class,
)
from nemo_runspec.cli.meta import RecipeMeta

if TYPE_CHECKING:
    from nemo_runspec.spec.models import Runspec

__all__ = [
    "RECIPE_CONTEXT_SETTINGS",
    "FastHelpCommand",
    "FastHelpGroup",
    "FastHelpMixin",
    "LazyCommand",
    "LazyGroup",
    "LazyRecipeCommand",
    "RecipeMeta",
    "RecipeTyper",
]

#: Context settings every recipe command uses: unknown words (overrides, script
#: arguments) are left in ``ctx.args`` and ``-h`` works like ``--help``.
RECIPE_CONTEXT_SETTINGS: dict[str, Any] = {
    "allow_extra_args": True,
    "ignore_unknown_options": True,
    "help_option_names": ["-h", "--help"],
}


class RecipeTyper(typer.Typer):
    """A :class:`typer.Typer` with :meth:`add_recipe_command`.

    Recipe commands accept extra words (overrides and script arguments), take
    ``-h``/``--help`` and render the recipe help panels from :mod:`nemo_runspec.cli.help`.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("cls", FastHelpGroup)
        kwargs.setdefault("no_args_is_help", True)
        kwargs.setdefault("add_completion", False)
        kwargs.setdefault("context_settings", {"help_option_names": ["-h", "--help"]})
        super().__init__(*args, **kwargs)

    def add_recipe_command(
        self,
        func: Callable[..., Any],
        *,
        meta: RecipeMeta | None = None,
        spec: Runspec | None = None,
        rich_help_panel: str | None = None,
        name: str | None = None,
    ) -> Callable[..., Any]:
        """Register ``func`` (taking a ``typer.Context``) as a recipe command.

        ``meta`` defaults to :meth:`RecipeMeta.from_spec` of the recipe's runspec
        ``spec`` and ``func``'s docstring. The command is named ``name`` or
        ``meta.command_name``; its help text is ``meta.description`` plus the
        recipe panels. An ``int`` that ``func`` returns is the exit code.
        """
        if meta is None:
            if spec is None:
                raise TypeError("add_recipe_command needs meta= or spec=")
            meta = RecipeMeta.from_spec(spec, func.__doc__)

        @functools.wraps(func)
        def command(*args: Any, **kwargs: Any) -> Any:
            code = _sweep_or_scales(func, spec, args, kwargs)
            if code is None:
                code = func(*args, **kwargs)
            if isinstance(code, int) and not isinstance(code, bool):
                raise typer.Exit(code)
            return code

        help_text = meta.description or (func.__doc__ or "").strip()
        return self.command(
            name=name or meta.command_name,
            cls=recipe_command_class(meta),
            context_settings=dict(RECIPE_CONTEXT_SETTINGS),
            help=help_text,
            rich_help_panel=rich_help_panel,
        )(command)

    def add_command_module(
        self, name: str, module: str, *, rich_help_panel: str | None = None
    ) -> None:
        """Register the recipe command ``name`` of ``module``, imported on first use.

        The command is the module's function ``name`` with its runspec
        (``SPECS[name]`` when the module serves several commands, else ``SPEC``).
        The module is imported only when the command is looked up (its group's
        ``--help`` lists it, or it runs), so ``nemotron --help`` and every other
        command do not parse its runspec. A module that fails to import (a
        broken runspec block, a missing dependency) becomes a stub
        (:meth:`add_failed_command`) at that point.
        """

        def placeholder(ctx: typer.Context) -> None:  # replaced before it could run
            raise RuntimeError(f"{module}.{name} was not loaded")

        self.command(
            name=name,
            cls=type(f"LazyRecipeCommand_{name}", (LazyRecipeCommand,),
                     {"lazy": (name, module, rich_help_panel)}),
            context_settings=dict(RECIPE_CONTEXT_SETTINGS),
            rich_help_panel=rich_help_panel,
        )(placeholder)

    def add_lazy_typer(self, name: str, module: str, attr: str = "app", *,
                       rich_help_panel: str | None = None) -> None:
        """Add the Typer app ``module.attr`` as the group ``name`` (like ``add_typer``),
        importing ``module`` only when the group is looked up (it runs, or this
        group's ``--help`` lists it). A module that fails to import becomes a stub
        (:meth:`add_failed_command`) at that point."""
        lazy = (name, module, attr, rich_help_panel, None)
        placeholder = RecipeTyper(cls=type(f"LazyGroup_{name}", (LazyGroup,), {"lazy": lazy}))
        self.add_typer(placeholder, name=name, rich_help_panel=rich_help_panel)

    def add_lazy_command(self, name: str, module: str, attr: str, *, rich_help_panel: str | None = None,
                         context_settings: dict[str, Any] | None = None, cls: type | None = None,
                         options_metavar: str | None = None) -> None:
        """Register the function ``module.attr`` as the command ``name`` (like
        ``self.command(name, cls=cls, ...)(function)``), importing ``module`` only when the
        command is looked up; a module that fails to import becomes a stub."""
        lazy = (name, module, attr, rich_help_panel, context_settings)

        def placeholder(ctx: typer.Context) -> None:  # replaced before it could run
            raise RuntimeError(f"{module}.{attr} was not loaded")

        attrs = {"lazy": lazy, "command_cls": cls, "options_metavar_text": options_metavar}
        self.command(name=name, cls=type(f"LazyCommand_{name}", (LazyCommand,), attrs),
                     context_settings=dict(RECIPE_CONTEXT_SETTINGS), rich_help_panel=rich_help_panel)(placeholder)

    def add_failed_command(
        self, name: str, error: BaseException | str, *, rich_help_panel: str | None = None
    ) -> None:
        """Register a stub ``name`` for a command whose module failed to import.

        Its help says ``failed to load: <error>``, so a broken command never
        silently disappears. Invoking it raises ``error`` itself when it is a
        :class:`~nemo_runspec.errors.NemoRunspecError` (a broken runspec or config
        is exit 2, as anywhere else), else an ``ExecutionError`` with that message
        (exit 1).
        """
        message = f"failed to load: {error}"

        def failed(ctx: typer.Context) -> None:
            from nemo_runspec.errors import ExecutionError, NemoRunspecError

            if isinstance(error, NemoRunspecError):
                # e.g. a broken [tool.runspec] block in the recipe script: the same
                # one-line error (file, line) and exit code as the problem itself.
                raise error
            raise ExecutionError(f"'{ctx.command_path}' {message}")

        failed.__doc__ = message
        self.command(
            name=name,
            help=message,
            cls=FastHelpCommand,
            context_settings=dict(RECIPE_CONTEXT_SETTINGS),
            rich_help_panel=rich_help_panel,
        )(failed)


def _sweep_or_scales(func: Callable[..., Any], spec: Runspec | None, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """``--scales`` (print the recipe's scale matrix) or ``-m`` (a sweep) for a recipe
    command called with its Typer context; None when neither was asked for."""
    ctx = args[0] if args else kwargs.get("ctx")
    if ctx is None or not hasattr(ctx, "find_root"):
        return None
    root = ctx.find_root()
    from nemo_runspec.cmdline.context import GlobalContext, split_global_args

    gctx = root.obj if root is not None and isinstance(root.obj, GlobalContext) else None
    if gctx is None:
        return None
    late, _ = split_global_args(list(ctx.args))
    scales, multirun = gctx.scales or late.scales, gctx.multirun or late.multirun
    if not (scales or multirun):
        return None
    if spec is None:
        from nemo_runspec.errors import CLIUsageError

        raise CLIUsageError(f"{ctx.command_path} takes neither -m/--multirun nor --scales (it has no runspec)")
    if scales:
        from nemo_runspec.scales.show import print_matrix

        return print_matrix(spec)
    from nemo_runspec.cmdline.recipe_config import parse_recipe_config
    from nemo_runspec.sweep.driver import run_sweep

    words = list(ctx.args)
    end = words.index("--") if "--" in words else len(words)
    no_resume = "--no-resume" in words[:end]  # the sweep's own option (pipe has one of its own)
    ctx.args = [w for i, w in enumerate(words) if not (i < end and w == "--no-resume")]
    cfg = parse_recipe_config(ctx)
    cfg.ctx.no_resume = no_resume
    # the command with its own arguments (`nemotron evaluate MODEL`); each point changes ctx
    return run_sweep(lambda _ctx: func(*args, **kwargs), ctx, spec, cfg)


class LazyRecipeCommand(FastHelpCommand):
    """Stands in for a command registered with :meth:`RecipeTyper.add_command_module`
    until its group looks it up (:meth:`FastHelpGroup.get_command` calls
    :meth:`resolve_lazy` and keeps the real command)."""

    #: (command name, module, rich help panel); set per command by add_command_module
    lazy: tuple[str, str, str | None]

    def resolve_lazy(self) -> Any:
        """The real click command: the module's recipe command, or a stub if it fails to import."""
        name, module, panel = self.lazy

        def register(app: RecipeTyper, mod: Any) -> Any:
            spec = mod.SPECS[name] if hasattr(mod, "SPECS") else mod.SPEC
            app.add_recipe_command(getattr(mod, name), spec=spec, rich_help_panel=panel, name=name)
            return typer.main.get_command(app)  # one command, no callback: the command itself

        return _resolve(name, module, panel, register)


def _resolve(name: str, module: str, panel: str | None, register: Callable[[RecipeTyper, Any], Any],
             attr: str | None = None) -> Any:
    """The click command ``register(app, target)`` returns for ``module`` (or its
    ``attr``), named ``name``; or a stub reporting why that did not import (one loader
    for every lazy kind)."""
    import importlib

    app = RecipeTyper()
    try:
        target = importlib.import_module(module)
        if attr is not None:
            target = getattr(target, attr)
    except Exception as exc:  # noqa: BLE001 - any import failure becomes a visible stub
        app.add_failed_command(name, exc, rich_help_panel=panel)
        command = typer.main.get_command(app)
    else:
        command = register(app, target)
    command.name = name
    if panel is not None:
        command.rich_help_panel = panel
    return command


def _resolve_attr(lazy: tuple[str, str, str, str | None, dict[str, Any] | None], group: bool,
                  cls: type | None = None, options_metavar: str | None = None) -> Any:
    """The click command of ``module.attr`` (a group when ``group``; of class ``cls``
    when given), or a stub."""
    name, module, attr, panel, settings = lazy

    def register(app: RecipeTyper, target: Any) -> Any:
        if group:
            return typer.main.get_group(target)
        extra: dict[str, Any] = {"cls": cls} if cls is not None else {}
        if options_metavar:
            extra["options_metavar"] = options_metavar
        app.command(name=name, rich_help_panel=panel, context_settings=settings, **extra)(target)
        return typer.main.get_command(app)

    return _resolve(name, module, panel, register, attr)


class LazyGroup(FastHelpGroup):
    """Stands in for a group added with :meth:`RecipeTyper.add_lazy_typer` until its
    parent looks it up (:meth:`FastHelpGroup.get_command` calls :meth:`resolve_lazy`)."""

    #: (group name, module, attribute, rich help panel, None); set per group
    lazy: tuple[str, str, str, str | None, dict[str, Any] | None]

    def resolve_lazy(self) -> Any:
        """The real group (``typer.main.get_group`` of the app), or a stub."""
        return _resolve_attr(self.lazy, group=True)


class LazyCommand(FastHelpCommand):
    """Stands in for a command registered with :meth:`RecipeTyper.add_lazy_command`
    until its group looks it up."""

    #: (command name, module, attribute, rich help panel, context settings); set per command
    lazy: tuple[str, str, str, str | None, dict[str, Any] | None]
    #: the real command's class (None: Typer's) and its usage line's options part
    command_cls: type | None = None
    options_metavar_text: str | None = None

    def resolve_lazy(self) -> Any:
        """The real command, or a stub."""
        return _resolve_attr(self.lazy, group=False, cls=self.command_cls, options_metavar=self.options_metavar_text)
