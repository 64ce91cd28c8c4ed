"""Rules on profile values beyond their types, each one line at the key that breaks it.

Checked with the model (:func:`nemo_runspec.env.validation.validate`) for every
profile table, merged profile and ``run.env``:

- ``job_name_prefix`` is at most :data:`JOB_NAME_PREFIX_MAX` characters: the job's
  log files are named ``log-<prefix><recipe>_<job id>_<attempt>.out``, and a file
  name over 255 bytes makes the job fail on the node before it writes any log;
- an ``env_vars`` value uses only the ``$`` forms of the one rule
  (:mod:`nemo_runspec.dollar`);
- then, in a complete profile, the executor's own rule on values (its backend's
  ``profile.value_problem``): a Slurm profile's ``job_dir``, when it is the cluster's job
  dir (the local tunnel, or SSH without ``remote_job_dir``), is a path the batch script
  can carry (:func:`nemo_runspec.script_values.check_cluster_dir`); a local run's may be
  any path.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from nemo_runspec.errors import EnvFileError

#: Longest job_name_prefix: with a runspec name (at most 128) it keeps log file names under 255 bytes.
JOB_NAME_PREFIX_MAX = 64

Locate = Callable[[tuple[str, ...]], tuple[str | None, int | None]]


def check_values(data: Mapping[str, Any], section: str, locate: Locate, *, complete: bool) -> None:
    """Raise the first broken rule of ``data`` (a profile table of ``section``) as an
    :class:`EnvFileError` at its key's line; values of the wrong type are the model's."""
    from nemo_runspec.dollar import LITERAL_DOLLAR_HINT, env_value_problem

    def fail(keypath: tuple[str, ...], problem: str, hint: str | None = None) -> EnvFileError:
        path, line = locate(keypath)
        return EnvFileError(f"key '{'.'.join(keypath)}' in {section}: {problem}", path=path, line=line,
                            key=".".join(keypath), hint=hint)

    prefix = data.get("job_name_prefix")
    if isinstance(prefix, str) and len(prefix) > JOB_NAME_PREFIX_MAX:
        raise fail(("job_name_prefix",), f"is {len(prefix)} characters long; at most {JOB_NAME_PREFIX_MAX}",
                   "it is part of the job's log file names, which must fit in 255 bytes")
    env_vars = data.get("env_vars")
    for name, value in (env_vars.items() if isinstance(env_vars, Mapping) else ()):
        why = env_value_problem(value) if isinstance(value, str) else None
        if why is not None:
            raise fail(("env_vars", str(name)), why, f"{LITERAL_DOLLAR_HINT}, or compute the value in startup_commands")
    executor = data.get("executor")
    if complete and isinstance(executor, str):
        from nemo_runspec.env.registry import declared

        rule = declared(executor).value_problem
        found = rule(data) if rule is not None else None
        if found is not None:
            raise fail((found.key,), found.problem, found.hint)
