"""The compiled job: one typed object that every step after the command line takes.

:func:`compile_job` builds it once per command from the recipe's runspec and
the parsed command line:

1. the recipe YAML (``-c NAME|PATH`` or the runspec default) with the overrides;
2. env.toml, found and read once (``--env-file`` > ``$NEMOTRON_ENV_FILE`` > the
   nearest one), its profile (``--run``/``--batch``) and its special sections;
3. the job config (the train config plus a ``run:`` section) whose ``run.env``
   merges runspec < recipe YAML < profile < command line, with where each value
   came from, and provenance (git commit, host, user, time). ``dry_run = true``
   there makes the job a dry run and ``detach = true`` turns ``--run`` into
   ``--batch`` (:func:`nemo_runspec.config.job_config.effective_mode`), so
   :attr:`CompiledJob.mode` and :attr:`CompiledJob.dry_run` may differ from the
   command line's.

A local run, the packager, the nemo-run executor, the dry-run display and the
submission all read this object; none of them looks for env.toml again.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Literal

from nemo_runspec.errors import CLIUsageError

if TYPE_CHECKING:
    from omegaconf import DictConfig

    from nemo_runspec.artifacts.registry import ArtifactRegistry
    from nemo_runspec.cmdline.recipe_config import RecipeConfig
    from nemo_runspec.env import EnvFile, EnvProfile
    from nemo_runspec.job.run_config import RunConfig
    from nemo_runspec.spec.models import Runspec

Mode = Literal["run", "batch", "local"]


@dataclass(frozen=True)
class CompiledJob:
    """Everything about one recipe run, resolved before anything runs or is submitted.

    Attributes:
        runspec: the recipe script's parsed ``[tool.runspec]``.
        mode: ``run`` (attached), ``batch`` (detached) or ``local``.
        dry_run: show what would run; write, run and submit nothing.
        passthrough: arguments for the recipe script itself.
        env_file: the env.toml this command read (None when there is none).
        profile: the selected profile (None in local mode).
        sections: env.toml's ``wandb``, ``artifacts``, ``cache`` and ``cli`` tables.
        train_config: the recipe config after overrides (what the user asked for).
        job_config: ``train_config`` plus the ``run:`` section (see
            :func:`nemo_runspec.config.build_job_config`).
        run_env: the merged execution settings (``run.env``).
        env_sources: where each ``run_env`` key was set (``env.toml:12 [dev]``...).
        force_squash: import the container image again even when its ``.sqsh``
            exists (``--force-squash``; see :mod:`nemo_runspec.slurm.squash`).
    """

    runspec: Runspec
    mode: Mode
    dry_run: bool
    passthrough: tuple[str, ...]
    env_file: EnvFile | None
    profile: EnvProfile | None
    sections: Mapping[str, Mapping[str, Any]]
    train_config: DictConfig
    job_config: DictConfig
    run_env: Mapping[str, Any]
    env_sources: Mapping[str, str]
    force_squash: bool = False

    @property
    def name(self) -> str:
        """The recipe's name (``nano3/pretrain``)."""
        return self.runspec.name

    @property
    def attached(self) -> bool:
        """True unless submitted detached with ``--batch``."""
        return self.mode != "batch"

    @property
    def executor(self) -> str:
        """The executor named by the run environment (``local`` without one)."""
        from nemo_runspec.env.registry import DEFAULT_EXECUTOR

        return str(self.run_env.get("executor") or DEFAULT_EXECUTOR)

    @property
    def is_local(self) -> bool:
        """True when the job runs on this machine, as a process tree of this CLI (no profile,
        or ``executor = "local"``): its backend's ``runs_here``."""
        from nemo_runspec.env.registry import backend_class

        return bool(backend_class(self.executor).runs_here)

    @property
    def shares_this_machine(self) -> bool:
        """True when the job sees this machine's filesystem, as its backend says
        (``shares_filesystem``): it runs here (``local``, ``docker``) or on a Slurm cluster
        this machine is a login node of (``tunnel = "local"``); False over an SSH tunnel or
        on a cloud executor."""
        from nemo_runspec.env.registry import backend_class

        return bool(backend_class(self.executor).shares_filesystem(self.run_env))

    @property
    def launch(self) -> str:
        """``torchrun``, ``ray`` or ``direct``, from the runspec."""
        from nemo_runspec.job.settings import launch_of

        return launch_of(self.runspec)

    @property
    def run_config(self) -> RunConfig:
        """What this job will do, as a :class:`~nemo_runspec.job.run_config.RunConfig`: the one it
        was compiled from after the run environment's ``detach``/``dry_run``.
        Derived from this object (not a second copy); compiling it again gives the same job."""
        from nemo_runspec.job.run_config import RunConfig

        cli = self.job_config.run.get("cli") or {}
        return RunConfig(
            profile=self.profile.name if self.profile is not None else None,
            detach=self.mode == "batch",
            dry_run=self.dry_run,
            config=cli.get("config"),
            overrides=tuple(cli.get("overrides") or ()),
            passthrough=self.passthrough,
            env_file=str(self.env_file.path) if self.env_file is not None else None,
            force_squash=self.force_squash,
            allow_untested_scale=bool((self.job_config.run.get("scale") or {}).get("untested")),
        )

    @cached_property
    def registry(self) -> ArtifactRegistry:
        """The artifact registry of this command (``$NEMOTRON_ARTIFACTS_ROOT``, else
        env.toml ``[artifacts]``, else ``$NEMOTRON_HOME/artifacts``)."""
        from nemo_runspec.artifacts.registry import registry_for

        return registry_for(self.sections)

    def script_config(self) -> DictConfig:
        """The config the recipe script reads (``train.yaml``): launcher bookkeeping
        dropped, secret-named literals removed (they reach the job as env vars)."""
        from nemo_runspec.config import extract_train_config

        return extract_train_config(self.job_config, for_remote=True)

    def files(self) -> dict[str, str]:
        """``{"job.yaml": ..., "train.yaml": ...}``, redacted, as written into the job dir."""
        from nemo_runspec.config.jobdir import render_configs

        return render_configs(self.job_config, self.script_config())


def _read_env_file(explicit: str | None) -> EnvFile | None:
    from nemo_runspec.env import find_env_file, load_env_file

    path = find_env_file(explicit)
    return load_env_file(path) if path is not None else None


def _refuse_profile_as_argument(words: list[str], env_file: EnvFile | None) -> None:
    """A bare word naming an env.toml profile is almost surely a forgotten ``--run``:
    the job would run here instead of on the cluster. (After ``--`` it passes.)"""
    for word in words:
        if env_file is not None and word in env_file.profiles:
            raise CLIUsageError(
                f"unexpected argument {word!r}: it is an env.toml profile",
                hint=f"to run on it use --run {word} (or --batch {word}); "
                     f"to pass {word!r} to the script put it after --",
            )


def compile_job(spec: Runspec, cfg: RunConfig | RecipeConfig, *, check_artifacts: bool = True,
                check: Callable[[DictConfig, Sequence[str]], None] | None = None) -> CompiledJob:
    """Compile the job a recipe command was asked to run (see the module docstring).

    ``cfg`` is a :class:`~nemo_runspec.job.run_config.RunConfig` (what Python callers build)
    or the command's :class:`~nemo_runspec.cmdline.recipe_config.RecipeConfig`.
    Raises the one-line :class:`~nemo_runspec.errors.NemoRunspecError` of the
    first problem found: config, override, env.toml, profile, or (unless
    ``check_artifacts`` is false or this is a dry run) an ``${art:...}`` that
    does not resolve in a registry this machine can read. ``check``, when given, is called
    with the recipe's config and the command line's overrides before that lookup (a
    recipe's typed check of its keys: a mistyped value is said before a missing artifact).
    """
    # Imported here: recipe command modules import this one for `--help`.
    from omegaconf import OmegaConf

    from nemo_runspec.config import build_job_config, parse_config
    from nemo_runspec.env import load_env_profile, read_sections
    from nemo_runspec.env.discovery import not_found_error
    from nemo_runspec.job.run_config import as_recipe_config
    from nemo_runspec.job.settings import job_env

    cfg = as_recipe_config(cfg)
    ctx = cfg.ctx
    if getattr(ctx, "multirun", False):  # a sweep compiles its points with it off (nemo_runspec.sweep)
        raise CLIUsageError("-m/--multirun does not apply here: only a recipe command sweeps",
                            hint="sweep one stage: nemotron nano3 pretrain -m KEY=a,b ...")
    train_config = parse_config(ctx, spec.config_dir, spec.config.default, empty_without_dir=not spec.config.declared)
    env_file = _read_env_file(ctx.env_file)
    _refuse_profile_as_argument(cfg.bare_words, env_file)
    profile = None
    if ctx.profile is not None:
        if env_file is None:
            raise not_found_error(ctx.profile)
        profile = load_env_profile(ctx.profile, env_file)
    sections = read_sections(env_file)
    job_config = build_job_config(train_config, ctx, spec.name, spec.script_path, cfg.argv,
                                  env_profile=profile, runspec=spec, wandb_section=sections.get("wandb"))
    from nemo_runspec.scales.apply import apply_scale

    job_config = apply_scale(spec, job_config, ctx)  # the scale matrix's cell (docs/runspec/v1/spec.md, 8)
    run = job_config.run
    from nemo_runspec.config.job_config import extract_train_config, warn_credential_shaped
    from nemo_runspec.config.references import check_key_references

    check_key_references(job_config, list(ctx.overrides or []))  # ${HOME} in a config: one line, now

    # what train.yaml will hold (before its secret-named entries are dropped)
    warn_credential_shaped(OmegaConf.to_container(extract_train_config(job_config), resolve=False))
    job = CompiledJob(
        runspec=spec,
        mode=run.mode,  # the command line's, after detach/dry_run in the run environment
        dry_run=bool(run.dry_run),
        passthrough=tuple(cfg.passthrough),
        env_file=env_file,
        profile=profile,
        sections=MappingProxyType({k: MappingProxyType(dict(v)) for k, v in sections.items()}),
        train_config=train_config,
        job_config=job_config,
        run_env=MappingProxyType(job_env(job_config)),
        env_sources=MappingProxyType(dict(run.get("env_sources") or {})),
        force_squash=bool(getattr(cfg, "force_squash", False)),
    )
    if job.force_squash and not job.run_env.get("squash_dir"):
        import sys

        print("warning: --force-squash has no effect: the profile sets no squash_dir, so the "
              "container image is not squashed (pyxis pulls it when the job starts)", file=sys.stderr)
    if check is not None:
        check(train_config, list(ctx.overrides or []))
    if check_artifacts and not job.dry_run:
        # A missing ${art:...} would otherwise be found on the node, after the queue wait;
        # a dry run shows each reference with what it resolves to instead.
        from nemo_runspec.config.resolvers import check_references

        check_references(job.job_config, job.registry, job_shares_this_machine=job.shares_this_machine)
    return job
