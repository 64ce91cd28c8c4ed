"""What a recipe run is asked to do (:class:`RunConfig`), and small, documented
adjustments to nemo-run 0.11.1 used by :mod:`nemo_runspec.slurm`.

Everything here imports ``nemo_run`` lazily (inside functions).

- :class:`RunConfig` is the typed request every recipe ``execute`` function
  takes: mode (local, or a profile attached/detached), dry run, config,
  overrides, script arguments. :func:`nemo_runspec.job.compiled.compile_job` compiles it;
  :attr:`nemo_runspec.job.compiled.CompiledJob.run_config` is the one the compiled job
  will actually do (after the profile's ``detach``/``dry_run``).
- :func:`experiment_class` returns an ``Experiment`` subclass whose experiment
  directory may already exist. We create the task directory ourselves before
  submission to place the 0600 secrets file in it; stock nemo-run's ``run()``
  calls ``os.makedirs(exp_dir, exist_ok=False)`` and would fail.
- :func:`quiet_nemo_run` stops invoke from reading stdin and silences nemo-run's global rich console and loggers
  (it prints from the submitting thread and from background threads), so the
  CLI alone decides what the user sees.
"""

from __future__ import annotations

import contextlib
import logging
import shlex
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from nemo_runspec.errors import CLIUsageError

if TYPE_CHECKING:
    from nemo_runspec.cmdline.context import GlobalContext
    from nemo_runspec.cmdline.recipe_config import RecipeConfig

_EXPERIMENT_CLS: Any = None

Mode = Literal["local", "run", "batch"]


@dataclass(frozen=True)
class RunConfig:
    """What one recipe run is asked to do: the typed form of a command line.

    Build one in Python (a pipeline, a notebook, another tool) and hand it to a
    recipe's ``execute`` function; the CLI builds the same object from argv.

    Attributes:
        profile: env.toml profile to submit with (``--run``/``--batch``); None runs here.
        detach: submit and return (``--batch``) instead of following the job
            (``--run``); needs a profile.
        dry_run: show the compiled job (and the exact sbatch script); run,
            write and submit nothing.
        config: config name in the recipe's config dir, or a YAML path (``-c``).
        overrides: ``key=value``, ``+key=value``, ``~key`` ... applied to the config.
        passthrough: arguments for the recipe script itself.
        env_file: env.toml to read (default: ``$NEMOTRON_ENV_FILE``, else the nearest).
        force_squash: accepted like ``--force-squash`` (see docs/cli.md).
        allow_untested_scale: a scale outside the recipe's scale matrix is a warning, not
            an error (``--allow-untested-scale``; docs/runspec/v1/spec.md section 8).

    :attr:`mode` is derived (``local``, ``run`` or ``batch``), so a RunConfig
    cannot say "detached" without a profile.
    """

    profile: str | None = None
    detach: bool = False
    dry_run: bool = False
    config: str | None = None
    overrides: tuple[str, ...] = ()
    passthrough: tuple[str, ...] = ()
    env_file: str | None = None
    force_squash: bool = False
    allow_untested_scale: bool = False

    def __post_init__(self) -> None:
        for name in ("overrides", "passthrough"):
            value = getattr(self, name)
            if isinstance(value, str):
                raise CLIUsageError(f"RunConfig.{name} must be a list of words, not the string {value!r}",
                                    key=name, hint=f"write {name}=[{value!r}]")
            object.__setattr__(self, name, tuple(str(v) for v in value))
        if self.profile is not None and not str(self.profile).strip():
            raise CLIUsageError("RunConfig.profile is empty", key="profile",
                                hint="name an env.toml profile, or None to run here")
        if self.detach and self.profile is None:
            raise CLIUsageError("RunConfig(detach=True) needs a profile to submit to", key="detach",
                                hint="RunConfig(profile='dev', detach=True), or detach=False to run here")

    @property
    def mode(self) -> Mode:
        """``local`` (no profile), ``run`` (submit and follow) or ``batch`` (submit, return)."""
        if self.profile is None:
            return "local"
        return "batch" if self.detach else "run"

    @property
    def attached(self) -> bool:
        """True unless submitted detached."""
        return not self.detach

    @classmethod
    def from_args(cls, args: str | Iterable[str]) -> RunConfig:
        """The RunConfig of a recipe command line (without the command itself).

        ``RunConfig.from_args("-c tiny --batch dev train.train_iters=5 -- --seed 3")``:
        the global options (``-c``, ``--run``, ``--batch``, ``-d``, ``--env-file``,
        ``--force-squash``) wherever they are, then overrides and script arguments,
        exactly as the CLI splits them. A string is split like a shell would.
        """
        from nemo_runspec.cmdline.context import split_global_args, split_unknown_args

        words = shlex.split(args) if isinstance(args, str) else [str(a) for a in args]
        gctx, rest = split_global_args(words)
        overrides, passthrough = split_unknown_args(rest)
        return cls.from_context(gctx, overrides=overrides, passthrough=[*passthrough, *gctx.passthrough])

    @classmethod
    def from_context(cls, gctx: GlobalContext, *, overrides: Iterable[str] | None = None,
                     passthrough: Iterable[str] | None = None) -> RunConfig:
        """The RunConfig of a CLI :class:`~nemo_runspec.cmdline.context.GlobalContext`
        (its overrides and script arguments unless given)."""
        return cls(
            profile=gctx.profile,
            detach=gctx.mode == "batch",
            dry_run=gctx.dry_run,
            config=gctx.config,
            overrides=tuple(gctx.overrides if overrides is None else overrides),
            passthrough=tuple(gctx.passthrough if passthrough is None else passthrough),
            env_file=gctx.env_file,
            force_squash=gctx.force_squash,
            allow_untested_scale=gctx.allow_untested_scale,
        )

    @classmethod
    def from_recipe_config(cls, cfg: RecipeConfig) -> RunConfig:
        """The RunConfig of the CLI's :class:`~nemo_runspec.cmdline.recipe_config.RecipeConfig`:
        the typed form of that command line, as the recipes' ``execute`` functions take it."""
        return cls.from_context(cfg.ctx, overrides=cfg.overrides, passthrough=cfg.passthrough)

    def recipe_config(self) -> RecipeConfig:
        """This RunConfig as the CLI's :class:`~nemo_runspec.cmdline.recipe_config.RecipeConfig`.

        Its script arguments are taken as given (as after ``--``): none is refused
        for naming an env.toml profile.
        """
        from nemo_runspec.cmdline.recipe_config import RecipeConfig

        ctx = self.context()
        return RecipeConfig(ctx=ctx, mode=ctx.mode, attached=ctx.attached, profile=ctx.profile,
                            dry_run=ctx.dry_run, force_squash=ctx.force_squash,
                            overrides=list(ctx.overrides), passthrough=list(ctx.passthrough),
                            argv=list(ctx.argv), config=ctx.config)

    def context(self, argv: Iterable[str] | None = None) -> GlobalContext:
        """The :class:`~nemo_runspec.cmdline.context.GlobalContext` the config loader reads.

        ``argv`` is what the job records as its command line (``run.cli.argv``);
        by default the equivalent command line of this RunConfig (:meth:`to_args`).
        """
        from nemo_runspec.cmdline.context import GlobalContext

        return GlobalContext(
            config=self.config,
            run=self.profile if self.mode == "run" else None,
            batch=self.profile if self.mode == "batch" else None,
            dry_run=self.dry_run,
            force_squash=self.force_squash,
            allow_untested_scale=self.allow_untested_scale,
            env_file=self.env_file,
            overrides=list(self.overrides),
            passthrough=list(self.passthrough),
            argv=list(self.to_args() if argv is None else argv),
        )

    def to_args(self) -> list[str]:
        """The command-line words that give this RunConfig (:meth:`from_args` reads them back)."""
        words: list[str] = []
        if self.config is not None:
            words += ["-c", self.config]
        if self.profile is not None:
            words += ["--batch" if self.detach else "--run", self.profile]
        if self.dry_run:
            words.append("--dry-run")
        if self.env_file is not None:
            words += ["--env-file", self.env_file]
        if self.force_squash:
            words.append("--force-squash")
        if self.allow_untested_scale:
            words.append("--allow-untested-scale")
        words += list(self.overrides)
        if self.passthrough:
            words += ["--", *self.passthrough]
        return words


def as_recipe_config(cfg: RecipeConfig | RunConfig) -> RecipeConfig:
    """``cfg`` as the CLI's :class:`~nemo_runspec.cmdline.recipe_config.RecipeConfig` (a
    :class:`RunConfig` is converted: :meth:`RunConfig.recipe_config`)."""
    from nemo_runspec.cmdline.recipe_config import RecipeConfig

    if isinstance(cfg, RecipeConfig):
        return cfg
    if isinstance(cfg, RunConfig):
        return cfg.recipe_config()
    raise CLIUsageError(f"expected a RunConfig (or the CLI's RecipeConfig), got {type(cfg).__name__}",
                        hint="build one with nemo_runspec.job.RunConfig(profile=..., config=..., overrides=[...])")


def experiment_class() -> Any:
    """``nemo_run.Experiment`` subclass that tolerates a pre-created experiment dir."""
    global _EXPERIMENT_CLS
    if _EXPERIMENT_CLS is None:
        import nemo_run as run

        class NemotronExperiment(run.Experiment):  # type: ignore[misc, valid-type]
            """Experiment whose directory may already hold our secrets file."""

            def _save_experiment(self, exist_ok: bool = False) -> None:
                super()._save_experiment(exist_ok=True)

        # nemo-run serialises the experiment with a reference to its class: make
        # it importable as nemo_runspec.job.run_config.NemotronExperiment (see __getattr__).
        NemotronExperiment.__qualname__ = "NemotronExperiment"
        NemotronExperiment.__module__ = __name__
        _EXPERIMENT_CLS = NemotronExperiment
    return _EXPERIMENT_CLS


def __getattr__(name: str) -> Any:
    if name == "NemotronExperiment":
        return experiment_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@contextlib.contextmanager
def quiet_nemo_run() -> Iterator[None]:
    """Mute nemo-run's console and loggers for the duration of the block."""
    import invoke.config
    from nemo_run.core.frontend.console.api import CONSOLE

    # nemo-run runs local commands through invoke ``Context()``s that read our
    # stdin in a background thread (eating keystrokes, failing under pytest).
    orig_defaults = invoke.config.Config.__dict__["global_defaults"]

    def global_defaults() -> dict[str, Any]:
        data = orig_defaults.__func__()
        data["run"]["in_stream"] = False
        return data

    invoke.config.Config.global_defaults = staticmethod(global_defaults)

    old_quiet = CONSOLE.quiet
    loggers = [logging.getLogger(n) for n in ("nemo_run", "torchx", "paramiko", "fabric", "invoke")]
    old_levels = [lg.level for lg in loggers]
    CONSOLE.quiet = True
    for lg in loggers:
        lg.setLevel(logging.ERROR)
    try:
        yield
    finally:
        invoke.config.Config.global_defaults = orig_defaults
        CONSOLE.quiet = old_quiet
        for lg, lvl in zip(loggers, old_levels, strict=True):
            lg.setLevel(lvl)
