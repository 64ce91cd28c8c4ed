"""What the CLI knows of ``nemo-evaluator-launcher`` without running it: whether it is
installed here, the container images an evaluation config makes it start (its task
registry names the benchmark images), and their ``.sqsh`` imports for a profile with
``squash_dir``. :mod:`nemo_runspec.evaluation.evaluator` re-exports all of it."""

from __future__ import annotations

import copy
import importlib.util
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from nemo_runspec.runtime.dotted import lookup

if TYPE_CHECKING:
    from nemo_runspec.slurm.squash import SquashPlan

LAUNCHER_MODULE = "nemo_evaluator_launcher"


def launcher_available() -> bool:
    """True when ``nemo_evaluator_launcher`` can be imported here (checked without importing it)."""
    try:
        return importlib.util.find_spec(LAUNCHER_MODULE) is not None
    except (ImportError, ValueError):
        return False


@dataclass(frozen=True)
class EvaluatorImage:
    """A container image the launcher starts for an evaluation.

    ``where`` is the config key that sets it (``None`` for an image only the launcher's
    task registry names); ``image`` is ``None`` when it cannot be known here.
    """

    role: str
    image: str | None
    where: str | None

    @property
    def settable(self) -> bool:
        """True when it can be replaced (by a ``.sqsh`` path): the model server, the
        proxy and the export job. Benchmark images are chosen by the launcher's task
        registry (an explicit ``container`` makes it read the image's own metadata)."""
        return self.where is not None and not self.where.startswith("evaluation.")


def harness_images(config: Mapping[str, Any]) -> dict[str, str]:
    """``{task name: image}`` from the launcher's packaged task registry, for the tasks
    without an explicit ``container`` ({} when the launcher is not importable here)."""
    if not launcher_available():
        return {}
    try:
        from nemo_evaluator_launcher.common.mapping import (
            get_task_definition_for_job,
            load_tasks_mapping,
        )

        mapping = load_tasks_mapping()
    except Exception:  # noqa: BLE001 - the registry is informative here, never required
        return {}
    out: dict[str, str] = {}
    for task in (config.get("evaluation") or {}).get("tasks") or []:
        name = str(task.get("name") or "")
        if not name or task.get("container"):
            continue
        try:
            out[name] = str(get_task_definition_for_job(task_query=name, base_mapping=mapping)["container"])
        except Exception:  # noqa: BLE001 - unknown task: the launcher reports it when it runs
            continue
    return out


def collect_images(config: Mapping[str, Any], *,
                   harness: Callable[[Mapping[str, Any]], Mapping[str, str]] | None = harness_images,
                   ) -> list[EvaluatorImage]:
    """Every container image an evaluation config makes the launcher start, in order:
    the model server (``deployment.image``), the load-balancing proxy
    (``execution.proxy.image`` with ``num_instances`` > 1), the W&B/MLflow export
    job (``execution.auto_export.export_image``, Slurm), and one benchmark image per
    task (its ``container``, else the launcher's registry: ``harness(config)``)."""
    images: list[EvaluatorImage] = []
    deployment = config.get("deployment") or {}
    execution = config.get("execution") or {}
    if str(deployment.get("type") or "none") != "none":
        images.append(EvaluatorImage("model server", deployment.get("image"), "deployment.image"))
    proxy = execution.get("proxy") if isinstance(execution, Mapping) else None
    if isinstance(proxy, Mapping) and proxy.get("image") and int(execution.get("num_instances") or 1) > 1:
        images.append(EvaluatorImage("proxy", proxy["image"], "execution.proxy.image"))
    auto = execution.get("auto_export") if isinstance(execution, Mapping) else None
    if isinstance(auto, Mapping) and auto.get("destinations") and execution.get("type") == "slurm":
        images.append(EvaluatorImage("export (" + ", ".join(map(str, auto["destinations"])) + ")",
                                     auto.get("export_image"), "execution.auto_export.export_image"))
    known = dict(harness(config)) if harness is not None else {}
    for i, task in enumerate((config.get("evaluation") or {}).get("tasks") or []):
        name = str(task.get("name") or f"#{i}")
        if task.get("container"):
            images.append(EvaluatorImage(f"benchmark {name}", str(task["container"]),
                                         f"evaluation.tasks[{i}].container"))
        else:
            images.append(EvaluatorImage(f"benchmark {name}", known.get(name), None))
    return images


def plan_image_squash(images: Iterable[EvaluatorImage], values: Mapping[str, Any], *,
                      force: bool = False) -> list[tuple[EvaluatorImage, SquashPlan]]:
    """The ``.sqsh`` import of each settable image, for a profile with ``squash_dir``
    (:func:`nemo_runspec.slurm.squash.plan_squash`); [] without one."""
    from nemo_runspec.slurm.squash import plan_squash

    plans = []
    seen: set[str] = set()
    for img in images:
        if not img.settable or not img.image or img.image in seen:
            continue
        plan = plan_squash(values, img.image, force=force)
        if plan is not None:
            plans.append((img, plan))
            seen.add(img.image)
    return plans


def apply_squashed(config: Mapping[str, Any], plans: Iterable[tuple[EvaluatorImage, SquashPlan]],
                   ) -> dict[str, Any]:
    """A copy of ``config`` with each planned image replaced by its ``.sqsh`` path
    (at the key that names it, where it still names that image)."""
    out = copy.deepcopy(dict(config))
    for img, plan in plans:
        if not img.settable or img.where is None or lookup(out, img.where) != img.image:
            continue
        *parents, leaf = img.where.split(".")
        node = out
        for part in parents:
            node = node[part]
        node[leaf] = plan.path
    return out
