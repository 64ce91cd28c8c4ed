"""A backend from outside nemo_runspec: registered by the entry point of the dist-info beside
it (``toy = toy_backend:ToyBackend`` in group ``nemo_runspec.backends``), as an installed
distribution registers one. Its dry run shows what it prepared; its submission writes it to
the file ``$TOY_SUBMITTED`` names."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Sequence
from typing import Any, ClassVar

from nemo_runspec.backends.base import DryRun


class ToyBackend:
    name: ClassVar[str] = "toy"
    chains: ClassVar[bool] = False
    waits_for_jobs: ClassVar[bool] = False
    sweeps: ClassVar[bool] = False

    def prepare(self, job: Any, *, dependencies: Sequence[str] = ()) -> dict[str, Any]:
        return {"name": job.name, "executor": job.executor, "script": job.runspec.name,
                "toy_greeting": job.run_env.get("env_vars", {}).get("TOY_GREETING")}

    def render(self, job: Any, prepared: dict[str, Any]) -> DryRun:
        return DryRun(scripts={"toy job": json.dumps(prepared, sort_keys=True) + "\n"},
                      warnings=("warning: the toy backend runs nothing",))

    def submit(self, job: Any, prepared: dict[str, Any]) -> int:
        with open(os.environ["TOY_SUBMITTED"], "w") as out:
            json.dump(prepared, out)
        print(f"toy: submitted {prepared['name']}", file=sys.stderr)
        return 0
