"""A backend from outside nemo_runspec: registered by the entry point of the dist-info beside
it (``toy = toy_backend:ToyBackend`` in group ``nemo_runspec.backends``), as an installed
distribution registers one. Its dry run shows what it prepared; its submission writes it to
the file ``$TOY_SUBMITTED`` names. It declares one key of its own, ``toy_nodes``, which
env.toml accepts in its profiles only."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from nemo_runspec.backends.base import DryRun
from nemo_runspec.env.keys import Key, ProfileKeys


class ToyBackend:
    name: ClassVar[str] = "toy"
    chains: ClassVar[bool] = False
    waits_for_jobs: ClassVar[bool] = False
    sweeps: ClassVar[bool] = False
    composes: ClassVar[bool] = False
    runs_here: ClassVar[bool] = False
    bare_metal: ClassVar[bool] = False
    nemo_run_executor: ClassVar[str | None] = None
    profile: ClassVar[ProfileKeys] = ProfileKeys(keys={"toy_nodes": Key(int, ge=1)})

    @classmethod
    def shares_filesystem(cls, values: Mapping[str, Any]) -> bool:
        return False

    def prepare(self, job: Any, *, dependencies: Sequence[str] = ()) -> dict[str, Any]:
        prepared = {"name": job.name, "executor": job.executor, "script": job.runspec.name,
                    "toy_greeting": job.run_env.get("env_vars", {}).get("TOY_GREETING")}
        if job.run_env.get("toy_nodes") is not None:
            prepared["toy_nodes"] = job.run_env["toy_nodes"]
        return prepared

    def render(self, job: Any, prepared: dict[str, Any]) -> DryRun:
        return DryRun(scripts={"toy job": json.dumps(prepared, sort_keys=True) + "\n"},
                      warnings=("warning: the toy backend runs nothing",))

    def submit(self, job: Any, prepared: dict[str, Any]) -> int:
        with open(os.environ["TOY_SUBMITTED"], "w") as out:
            json.dump(prepared, out)
        print(f"toy: submitted {prepared['name']}", file=sys.stderr)
        return 0
