"""The environment ``sbatch`` runs in: the caller's, without its secrets.

``sbatch`` copies its whole environment into the job and into Slurm's own
state on disk (``<StateSaveLocation>/hash.N/job.ID/environment``), where any
user with access to the controller's files can read it. A token exported in
the submitting shell (``HF_TOKEN``, ``WANDB_API_KEY``, ...) would end up there
and in every job, whether the job asked for it or not.

While a job is submitted, :func:`submission_environment` takes out of
``os.environ`` every variable that the one secret rule
(:mod:`nemo_runspec.secrets`) calls secret: a secret-looking name, a
credential-shaped value, or a value equal to one of the job's secrets. The job
gets its secrets only from the 0600 secrets file; the rest of the caller's
environment (``PATH``, a virtualenv, ``NCCL_*`` settings...) still reaches it
as before. With an SSH tunnel ``sbatch`` runs in the cluster login's own
environment, which this process does not send.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager

from nemo_runspec.secrets import is_secret_name, looks_like_credential, searchable


def withheld_names(environ: Mapping[str, str], secret_values: Iterable[str] = ()) -> list[str]:
    """The names of ``environ`` that must not reach ``sbatch``."""
    values = searchable(secret_values)
    return sorted(
        name for name, value in environ.items()
        if is_secret_name(name) or looks_like_credential(value) or any(v in value for v in values)
    )


#: variables that describe this machine's own run, never a job's
LOCAL_ONLY = ("NEMOTRON_LAUNCHER", "NEMOTRON_LAUNCH_LEASE")


@contextmanager
def submission_environment(secret_values: Iterable[str] = ()) -> Iterator[list[str]]:
    """Run the body with the caller's secrets taken out of ``os.environ``; yields
    the names withheld and puts them back afterwards, whatever happens."""
    names = withheld_names(os.environ, secret_values)
    # a local run's launcher mark (nemo_runspec.artifacts.registry) means nothing in a Slurm job
    names += [n for n in LOCAL_ONLY if n in os.environ and n not in names]
    saved = {name: os.environ.pop(name) for name in names}
    try:
        yield names
    finally:
        os.environ.update(saved)
