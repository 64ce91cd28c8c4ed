"""GlobalContext: the CLI state every recipe command shares.

Global options (``-c/--config``, ``-r/--run``, ``-b/--batch``, ``-d/--dry-run``,
``--force-squash``, ``--env-file``, ``--debug``, the sweep options ``-m/--multirun`` and
``--parallel N``, and the scale-matrix ones ``--allow-untested-scale``, ``--scales``) may
appear before or after the subcommand; :func:`split_global_args` pulls them out of ``argv`` wherever they are.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

from nemo_runspec.errors import CLIUsageError

Mode = Literal["run", "batch", "local"]


@dataclass
class GlobalContext:
    """Options shared by all recipe commands, plus the words left for the recipe."""

    config: str | None = None
    run: str | None = None
    batch: str | None = None
    dry_run: bool = False
    force_squash: bool = False
    env_file: str | None = None
    debug: bool = False
    multirun: bool = False
    """``-m/--multirun``: overrides with several values are a sweep, one run per point (docs/sweeps.md)."""
    parallel: str | None = None
    """``--parallel N``: at most N points of a sweep at once (locally: processes; Slurm: ``--array=...%N``)."""
    no_resume: bool = False
    """``--no-resume`` after a recipe command with ``-m``: run every point of the sweep again, not
    only those that did not complete (not a global option: ``nano3 pipe --no-resume`` is pipe's own)."""
    allow_untested_scale: bool = False
    """``--allow-untested-scale``: a scale outside the recipe's matrix is a warning, not an error."""
    scales: bool = False
    """``--scales``: print the recipe's scale matrix and exit."""
    recipe_dirs: list[str] = field(default_factory=list)
    """Directories named with ``--recipe-dir`` (repeatable): their recipe scripts become commands."""
    overrides: list[str] = field(default_factory=list)
    passthrough: list[str] = field(default_factory=list)
    argv: list[str] = field(default_factory=list)

    @property
    def mode(self) -> Mode:
        """``run`` (attached), ``batch`` (detached) or ``local`` (no profile)."""
        if self.run is not None:
            return "run"
        if self.batch is not None:
            return "batch"
        return "local"

    @property
    def profile(self) -> str | None:
        """The env.toml profile selected with ``--run`` or ``--batch``."""
        return self.run if self.run is not None else self.batch

    @property
    def attached(self) -> bool:
        """True unless the job is submitted detached with ``--batch``."""
        return self.mode != "batch"


# --------------------------------------------------------------------------
# Global option extraction
# --------------------------------------------------------------------------

# long name -> (field, takes a value, what the value is called in errors)
_VALUE_OPTIONS: dict[str, tuple[str, str]] = {
    "--config": ("config", "a config name or path"),
    "--run": ("run", "a profile name"),
    "--batch": ("batch", "a profile name"),
    "--env-file": ("env_file", "a path"),
    "--recipe-dir": ("recipe_dirs", "a directory"),
    "--parallel": ("parallel", "a number of points"),
}
_FLAG_OPTIONS: dict[str, str] = {
    "--dry-run": "dry_run",
    "--force-squash": "force_squash",
    "--debug": "debug",
    "--multirun": "multirun",
    "--allow-untested-scale": "allow_untested_scale",
    "--scales": "scales",
}
_SHORT_VALUE = {"c": "--config", "r": "--run", "b": "--batch"}
_SHORT_FLAG = {"d": "--dry-run", "m": "--multirun"}

#: Every global option spelling, for help output and docs.
GLOBAL_OPTIONS: tuple[tuple[str, str, str], ...] = (
    ("-c, --config NAME|PATH", "--config", "Config name in the recipe's config dir, or a YAML path"),
    ("-r, --run PROFILE", "--run", "Submit to the env.toml profile and follow the job (attached)"),
    ("-b, --batch PROFILE", "--batch", "Submit to the env.toml profile and return (detached)"),
    ("-d, --dry-run", "--dry-run", "Show the compiled job and configs; touch nothing"),
    ("--force-squash", "--force-squash", "Re-import the container image into its .sqsh even if one exists (Slurm)"),
    ("--env-file PATH", "--env-file", "Use this env.toml instead of discovering one"),
    ("--recipe-dir DIR", "--recipe-dir", "Also make the recipe scripts under DIR commands (repeatable)"),
    ("-m, --multirun", "--multirun", "Sweep: one run per value of overrides like a=1,2 or range(..) (one Slurm array)"),
    ("--parallel N", "--parallel", "Sweep: at most N points at once (here: processes; Slurm: --array=...%N)"),
    ("--allow-untested-scale", "--allow-untested-scale", "Run at a scale outside the recipe's matrix (a warning)"),
    ("--scales", "--scales", "Print the recipe's scale matrix (GPU types, nodes, precisions) and exit"),
    ("--debug", "--debug", "Show tracebacks (also NEMOTRON_DEBUG=1)"),
)

_OVERRIDE = re.compile(r"^(\+\+|\+)?(\*\.)?[A-Za-z_][\w.\-\[\]]*=.*\Z", re.S)  # *.key: every stage of a pipe
_DELETE = re.compile(r"^~(\*\.)?[A-Za-z_][\w.\-\[\]]*(=.*)?\Z", re.S)


def _looks_like_option(word: str) -> bool:
    return word.startswith("-") and len(word) > 1


def _set_value(ctx: GlobalContext, long: str, value: str, given: dict[str, str]) -> None:
    field_name, what = _VALUE_OPTIONS[long]
    if value == "":
        raise CLIUsageError(f"{long} needs {what}", hint=f"e.g. {long} NAME")
    if field_name == "recipe_dirs":  # repeatable
        ctx.recipe_dirs.append(value)
        return
    previous = getattr(ctx, field_name)
    if previous is not None and previous != value:
        raise CLIUsageError(
            f"{long} given twice with different values ({given[long]!r} and {value!r})",
            hint="pass it once",
        )
    setattr(ctx, field_name, value)
    given[long] = value


def _take_value(argv: list[str], i: int, long: str, shown: str) -> str:
    """The word after ``argv[i]`` as the value of ``long`` (error if absent/an option)."""
    _, what = _VALUE_OPTIONS[long]
    if i + 1 >= len(argv) or _looks_like_option(argv[i + 1]):
        after = "" if i + 1 >= len(argv) else f", got option {argv[i + 1]!r}"
        raise CLIUsageError(
            f"{shown} needs {what}{after}",
            hint=f"write {shown} VALUE or {long}=VALUE",
        )
    return argv[i + 1]


def split_global_args(argv: list[str]) -> tuple[GlobalContext, list[str]]:
    """Pull the global options out of ``argv``, wherever they appear before ``--``.

    Accepted spellings: ``--run X``, ``--run=X``, ``-r X``, ``-r=X``, ``-rX`` (same for
    ``-c/--config``, ``-b/--batch``; ``--env-file X``/``--env-file=X``), flags
    ``-d/--dry-run``, ``--force-squash``, ``--debug``, and short clusters such as
    ``-dc tiny``. Everything after a literal ``--`` is kept verbatim in
    ``ctx.passthrough`` and is not returned in ``rest``.

    Returns ``(ctx, rest)`` where ``rest`` is what remains for Typer (subcommand
    path, overrides, script arguments) in the original order. ``ctx.argv`` is the
    full original ``argv``.

    Raises:
        CLIUsageError: a value-less option, ``--run`` with ``--batch``, or the same
            option given twice with different values.
    """
    argv = list(argv)
    ctx = GlobalContext(argv=list(argv))
    rest: list[str] = []
    given: dict[str, str] = {}
    i = 0
    while i < len(argv):
        word = argv[i]
        if word == "--":
            ctx.passthrough = argv[i + 1 :]
            break
        if word.startswith("--"):
            name, eq, value = word.partition("=")
            if name in _VALUE_OPTIONS:
                if eq:
                    _set_value(ctx, name, value, given)
                else:
                    _set_value(ctx, name, _take_value(argv, i, name, name), given)
                    i += 1
                i += 1
                continue
            if name in _FLAG_OPTIONS:
                if eq:
                    raise CLIUsageError(f"{name} takes no value", hint=f"write just {name}")
                setattr(ctx, _FLAG_OPTIONS[name], True)
                i += 1
                continue
            rest.append(word)
            i += 1
            continue
        if _looks_like_option(word) and _is_global_cluster(word[1:]):
            i = _consume_cluster(ctx, argv, i, given)
            continue
        rest.append(word)
        i += 1
    if ctx.run is not None and ctx.batch is not None:
        raise CLIUsageError(
            "--run and --batch cannot be used together",
            hint="--run follows the job, --batch submits and returns; pick one",
        )
    return ctx, rest


def _is_global_cluster(chars: str) -> bool:
    """True for ``d``, ``dd``, ``c...``, ``dc...``: flags then at most one value option."""
    for ch in chars:
        if ch in _SHORT_FLAG:
            continue
        return ch in _SHORT_VALUE
    return True


def _consume_cluster(ctx: GlobalContext, argv: list[str], i: int, given: dict[str, str]) -> int:
    word = argv[i]
    chars = word[1:]
    for k, ch in enumerate(chars):
        if ch in _SHORT_FLAG:
            setattr(ctx, _FLAG_OPTIONS[_SHORT_FLAG[ch]], True)
            continue
        long = _SHORT_VALUE[ch]
        attached = chars[k + 1 :]
        if attached.startswith("="):
            attached = attached[1:]
            if not attached:
                raise CLIUsageError(
                    f"-{ch} needs {_VALUE_OPTIONS[long][1]}", hint=f"write -{ch} VALUE"
                )
        if attached:
            _set_value(ctx, long, attached, given)
            return i + 1
        _set_value(ctx, long, _take_value(argv, i, long, f"-{ch}"), given)
        return i + 2
    return i + 1


def is_override(word: str) -> bool:
    """True for ``key=value``, ``+key=value``, ``++key=value`` and ``~key``."""
    return bool(_OVERRIDE.match(word) or _DELETE.match(word))


def split_unknown_args(
    args: list[str], ctx: GlobalContext | None = None
) -> tuple[list[str], list[str]]:
    """Split the words Typer did not consume into ``(overrides, passthrough)``.

    Overrides are ``key=value``, ``+key=value``, ``++key=value`` and ``~key`` (a
    key starts with a letter or ``_`` and may contain dots). Every other word
    (``--flag``, ``-x``, ``value``, ``a/b=c``) passes through to the script, in
    order.

    Late globals (the reference's ``pretrain x=1 --run dev -d``): with ``ctx``,
    global options among ``args`` (before a ``--``) are taken out and set on
    ``ctx`` (:func:`merge_late_globals`), and the words after ``--`` pass
    through verbatim. Without ``ctx`` a global option here is an error, as it
    would otherwise be handed to the script.
    """
    if ctx is not None:
        late, args = split_global_args(list(args))
        merge_late_globals(ctx, late)
        overrides, passthrough = split_unknown_args(args)
        return overrides, [*passthrough, *late.passthrough]
    overrides: list[str] = []
    passthrough: list[str] = []
    for word in args:
        if is_override(word):
            overrides.append(word)
        else:
            _refuse_near_global(word)
            passthrough.append(word)
    return overrides, passthrough


def merge_late_globals(ctx: GlobalContext, late: GlobalContext) -> None:
    """Set on ``ctx`` the global options found after the subcommand (``late``).

    A value given both places must agree; ``--run`` with ``--batch`` is an error.
    """
    for name in ("config", "run", "batch", "env_file", "parallel"):
        value = getattr(late, name)
        if value is None:
            continue
        earlier = getattr(ctx, name)
        if earlier is not None and earlier != value:
            option = "--" + name.replace("_", "-")
            raise CLIUsageError(f"{option} given twice: {earlier!r} and {value!r}",
                                hint=f"give {option} once")
        setattr(ctx, name, value)
    for name in ("dry_run", "force_squash", "debug", "multirun", "allow_untested_scale", "scales"):
        if getattr(late, name):
            setattr(ctx, name, True)
    ctx.recipe_dirs.extend(d for d in late.recipe_dirs if d not in ctx.recipe_dirs)
    if ctx.run is not None and ctx.batch is not None:
        raise CLIUsageError(
            "--run and --batch cannot be used together",
            hint="--run follows the job, --batch submits and returns; pick one",
        )


_GLOBAL_LONG = tuple(long for _, long, _ in GLOBAL_OPTIONS)


def _refuse_near_global(word: str) -> None:
    """A mistyped global option (``--dryrun``, ``--runn``) must not silently become a
    script argument: the job would run, or be submitted, for real."""
    if not word.startswith("--") or len(word) < 4:
        return
    name = word.split("=", 1)[0]
    dotted = re.fullmatch(r"--(run|batch)\.([A-Za-z_][\w.]*)", name)
    if dotted:  # the upstream CLI's `--run.nodes 8`: here an override, after the profile
        key = dotted.group(2)
        raise CLIUsageError(
            f"unknown option {name!r}",
            hint=f"set it with the override run.{key}=VALUE (the same as run.env.{key}=VALUE) "
                 f"and choose the profile with --{dotted.group(1)} PROFILE",
        )
    normalised = name.lower().replace("_", "-")
    candidates = [g for g in _GLOBAL_LONG if g not in ("--debug",)]
    prefix_of = [g for g in candidates if g.startswith(normalised) and len(normalised) >= 4]
    if normalised in candidates:
        best: str | None = normalised
    elif prefix_of:  # an abbreviation (--dry, --env, --conf): never a script flag by accident
        best = prefix_of[0]
    else:
        from nemo_runspec._suggest import closest

        best = closest(normalised, candidates, cutoff=0.75)
    if best is not None and best == name:  # the option itself, where no global option is read
        raise CLIUsageError(
            f"global option {name} is not read here (it would be handed to the script)",
            hint="give it before the subcommand, or pass the GlobalContext: split_unknown_args(args, ctx); "
                 f"to pass {name} to the script, put it after --",
        )
    if best is not None:
        raise CLIUsageError(
            f"unknown option {name!r}",
            hint=f"did you mean '{best}'? To pass {name} to the script, put it after --",
        )
