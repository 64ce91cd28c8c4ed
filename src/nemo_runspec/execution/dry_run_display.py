"""Rich display of a compiled job: the ``--dry-run`` output (the backends render it through
:func:`show_rendered`; :mod:`nemo_runspec.cli.display` re-exports these names).

Everything shown goes through :func:`nemo_runspec.secrets.redact` (plus every
secret value :func:`~nemo_runspec.secrets.find_secret_values` finds in the job,
so a token is masked wherever it is repeated). Showing a job has no side
effects: nothing is written or submitted; a file-based artifact registry is read.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console

    from nemo_runspec.config.tree import ConfigTree
    from nemo_runspec.env.profile import EnvProfile
    from nemo_runspec.job.compiled import CompiledJob


def _plain(cfg: object) -> Any:
    """A plain, unresolved container of ``cfg`` (DictConfig, dict or None)."""
    if cfg is None:
        return {}
    from omegaconf import DictConfig, ListConfig, OmegaConf

    if isinstance(cfg, (DictConfig, ListConfig)):
        return OmegaConf.to_container(cfg, resolve=False)
    return cfg


def to_yaml(data: object) -> str:
    """Block-style YAML of plain data, keys in their original order (:mod:`nemo_runspec.config.yaml_io`)."""
    from nemo_runspec.config.yaml_io import to_yaml as dump  # PyYAML: not at --help time

    return dump(data)


def dry_run_sections(
    job_config: ConfigTree | None, train_config: ConfigTree | None, *, env_profile: EnvProfile | None = None
) -> dict[str, Any]:
    """The redacted content of a dry run, as plain data.

    Keys: ``header`` (recipe, script, mode, profile, env_file, config, overrides,
    passthrough, container: what a Slurm job runs in, or None), ``env`` (list of
    ``(key, value, source)``), ``scale`` (the scale matrix's cell and the config keys
    it set, ``(key, value, source)``, as :func:`scale_rows`), ``job_yaml``, ``train_yaml``.
    """
    from nemo_runspec.config.credential_values import not_secret_values
    from nemo_runspec.job.settings import (
        container_choice,
        job_env,  # run.env as the job reads it (dollar.py)
    )
    from nemo_runspec.secrets import find_secret_values, redact, redact_text

    job = _plain(job_config)
    train = _plain(train_config)
    extra = find_secret_values(job, train, env_profile.values if env_profile is not None else {})
    allow = not_secret_values(job) if isinstance(job, Mapping) else []
    job_r = redact(job, extra_values=extra, allow=allow)
    train_r = redact(train, extra_values=extra, allow=allow)
    run = job_r.get("run", {}) if isinstance(job_r, Mapping) else {}
    recipe = run.get("recipe") or {}
    cli = run.get("cli") or {}
    env = redact(job_env(job_config), extra_values=extra, allow=allow) if job_config is not None else {}
    sources = run.get("env_sources") or {}
    env_path = env_profile.path if env_profile is not None else None
    header = {
        "recipe": recipe.get("name"),
        "script": recipe.get("script"),
        "mode": run.get("mode"),
        "profile": run.get("profile"),
        "env_file": str(env_path) if env_path else None,
        "config": cli.get("config"),
        "overrides": list(cli.get("overrides") or []),
        "passthrough": list(cli.get("passthrough") or []),
        "container": container_choice(env, str(sources.get("container_image", "")) or None, compiled=True)
        if isinstance(env, Mapping) else None,
    }
    rows = [
        (str(key), _short(value), str(sources.get(key, "")))
        for key, value in (env.items() if isinstance(env, Mapping) else [])
    ]
    return {
        "header": header,
        "env": rows,
        "scale": scale_rows(run.get("scale")),
        "job_yaml": redact_text(to_yaml(job_r), extra, allow=allow),
        "train_yaml": redact_text(to_yaml(train_r), extra, allow=allow),
    }


def scale_rows(scale: object) -> list[tuple[str, str, str]]:
    """``run.scale`` of a job config as ``(key, value, source)`` rows, like ``run.env``'s:
    the cell first, then each config key the matrix set (empty without a matrix)."""
    if not isinstance(scale, Mapping):
        return []
    source = str(scale.get("from") or "scale matrix")
    cell = scale.get("cell")
    if not isinstance(cell, Mapping):
        return [("(cell)", "none: outside the matrix, --allow-untested-scale", source)]
    note = f"{source}; {scale['note']}" if scale.get("note") else source
    shown = f"{cell.get('gpu_type')} x {cell.get('nodes')} node(s) {cell.get('precision')}"
    overrides = scale.get("overrides") or {}
    return [("(cell)", shown, note), *((str(k), str(v).lower() if isinstance(v, bool) else _short(v), source)
                                       for k, v in overrides.items())]


def _short(value: object) -> str:
    if isinstance(value, (dict, list)):
        import json

        return json.dumps(value, sort_keys=True)
    return "null" if value is None else str(value)


def display_dry_run(
    job_config: ConfigTree | None,
    train_config: ConfigTree | None,
    *,
    env_profile: EnvProfile | None = None,
    console: Console | None = None,
    scripts: Mapping[str, str] | None = None,
    commands: Sequence[str] | None = None,
    artifacts: Sequence[Mapping[str, Any]] | None = None,
) -> None:
    """Print what would run: header, ``run.env`` with provenance, job and train YAML,
    then the exact sbatch script(s) (``scripts``: title -> text) or local command lines.

    Args:
        job_config: the compiled job config (train config + ``run:`` section).
        train_config: the train config the script would receive.
        env_profile: the selected ``EnvProfile`` (for the env file path and its
            secret values), or None for local runs.
        console: where to print (default: a new stdout console).
    """
    from rich.console import Console
    from rich.panel import Panel
    from rich.table import Table
    from rich.text import Text

    out = console or Console(highlight=False)
    data = dry_run_sections(job_config, train_config, env_profile=env_profile)
    head = data["header"]

    summary = Table.grid(padding=(0, 2))
    summary.add_column(style="bold cyan", no_wrap=True)
    summary.add_column()
    for label, key in (
        ("recipe", "recipe"), ("script", "script"), ("mode", "mode"), ("profile", "profile"),
        ("env file", "env_file"), ("config", "config"),
    ):
        value = head[key]
        summary.add_row(label, Text("-" if value in (None, "") else str(value)))
    summary.add_row("overrides", Text(" ".join(head["overrides"]) or "-"))
    summary.add_row("script args", Text(" ".join(head["passthrough"]) or "-"))
    if head.get("container"):
        summary.add_row("container", Text(head["container"]))
    out.print(Panel(summary, title="Dry run: nothing submitted", title_align="left", border_style="yellow"))

    env_table = Table(title="run.env (execution settings)", title_justify="left", expand=False)
    env_table.add_column("key", style="bold")
    env_table.add_column("value", overflow="fold")
    env_table.add_column("source", style="dim", overflow="fold")
    for key, value, source in data["env"]:
        env_table.add_row(Text(key), Text(value), Text(source))  # user text, never markup
    if not data["env"]:
        env_table.add_row("-", "-", "-")
    out.print(env_table)
    if data["scale"]:
        scale_table = Table(title="config keys from the scale matrix", title_justify="left", expand=False)
        for name, style in (("key", "bold"), ("value", None), ("source", "dim")):
            scale_table.add_column(name, style=style, overflow="fold")
        for key, value, source in data["scale"]:
            scale_table.add_row(Text(key), Text(value), Text(source))
        out.print(scale_table)

    # soft_wrap: long values stay on one line, so the YAML can be copied as is.
    out.print("[bold]Job config[/bold] (job.yaml)")
    out.print(data["job_yaml"], markup=False, highlight=False, soft_wrap=True, end="")
    out.print("[bold]Train config[/bold] (train.yaml, what the script receives)")
    out.print(data["train_yaml"], markup=False, highlight=False, soft_wrap=True, end="")
    if artifacts:
        art_table = Table(title="Artifacts (${art:...} as of now)", title_justify="left", expand=False)
        art_table.add_column("reference", style="bold")
        art_table.add_column("resolves to", overflow="fold")
        for a in artifacts:
            if "path" in a:
                art_table.add_row(Text(str(a["ref"])), Text(f"v{a['version']}  {a['path']}"))
            else:
                art_table.add_row(Text(str(a["ref"])), Text(str(a.get("error")), style="red")
                                  if a.get("error") else Text(str(a.get("note"))))
        out.print(art_table)
    for title, text in (scripts or {}).items():
        # Byte-identical to what submission writes: printed raw, never re-wrapped.
        out.print(Text(title, style="bold") + Text(" (exact script that would be submitted)"))
        out.print(text, markup=False, highlight=False, soft_wrap=True, end="" if text.endswith("\n") else "\n")
    for line in commands or ():
        out.print("[bold]Local command[/bold]")
        out.print(line, markup=False, highlight=False, soft_wrap=True)


def show_rendered(job: CompiledJob, *, scripts: Mapping[str, str] | None = None,
                  commands: Sequence[str] | None = None, warnings: Sequence[str] = (),
                  console: Console | None = None, extra: Callable[[Console], object] | None = None) -> None:
    """Print the dry run of ``job`` with what its backend rendered (the scripts, title -> text,
    or the local command lines; :class:`nemo_runspec.backends.base.DryRun`), then ``extra``
    (the command's own block), then the backend's ``warnings`` on stderr."""
    import sys

    from rich.console import Console

    from nemo_runspec.config.resolvers import describe_references

    console = console or Console(highlight=False)
    display_dry_run(job.job_config, job.script_config(), env_profile=job.profile, console=console,
                    scripts=None if scripts is None else dict(scripts),
                    commands=None if commands is None else list(commands),
                    artifacts=describe_references(job.job_config, registry=job.registry))
    if extra is not None:
        extra(console)
    for line in warnings:
        print(line, file=sys.stderr)
