"""The compatibility table: which library versions each container image carries.

A native job runs the libraries inside the image its runspec (or profile) names,
so every call our entry points make must match *that* version. :data:`TABLE` is
the one place that says, per image, which Megatron-Bridge, Megatron Core, NeMo-RL
and NeMo Evaluator it ships, where that comes from, and which nano3 stages it
serves. The runspecs name images of this table (``tests/nemotron/training/
test_versions_table.py``); the dry run shows a stage's row and what the native
entry will call in it; the job checks the installed versions against it before
building anything (:mod:`nemotron.training.version_check`). docs/training.md
("Images and versions") prints the table and says how to add a newer image.

Sources, cited per row:

- Megatron-Bridge's release table ``docs/releases/software-versions.md`` (tags
  v0.3.0 ... v0.6.0: one section per NeMo Framework image);
- its ``docs/versions1.json`` on main (``"0.6.0 · 26.08"``, ``"0.3.1 · 26.02.01"``, ...)
  for the images that table does not list;
- the Megatron-LM commit a Megatron-Bridge tag pins (``3rdparty/Megatron-LM``) and
  that commit's ``megatron/core/package_info.py``, for the Megatron Core version;
- NeMo-RL's tags (``nemo_rl/package_info.py``, the submodule pins) and its release
  notes / guides naming the images;
- reasoning, where an image is a model-specific build with no table row (marked
  ``inferred``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .release import in_range, parse_version  # noqa: F401 - re-exported: the table's version arithmetic

#: the libraries the table tracks, by distribution name
LIBRARIES = ("megatron-bridge", "megatron-core", "nemo-rl", "nemo-evaluator")
#: which library each nano3 stage calls natively (eval's launcher is checked by its own range)
STAGE_LIBRARY = {"pretrain": "megatron-bridge", "sft": "megatron-bridge", "convert": "megatron-bridge",
                 "rl": "nemo-rl"}
#: what the NeMo Framework images serve (``prep``: the data-prep stages)
NEMO_STAGES = ("prep", "pretrain", "sft", "convert", "eval")


@dataclass(frozen=True)
class ImageRow:
    """One image and the library versions it carries.

    Attributes:
        image: the image reference as a runspec or profile writes it.
        versions: ``{distribution: version}``, the version the package reports
            (``package_info.py``); a library the image does not carry is absent.
        stages: the nano3 stages this image is for; empty: known, but not for nano3
            (``why_not`` says why).
        source: where the versions come from (file and tag, or the reasoning).
        inferred: True when no release table lists the image and the versions are
            reasoned from the libraries' branches and the guides that name the image.
        why_not: for a row without stages, the reason (shown when a job runs in it).
    """

    image: str
    versions: dict[str, str]
    stages: tuple[str, ...]
    source: str
    inferred: bool = False
    why_not: str = ""
    notes: tuple[str, ...] = field(default=())


_MB_TABLE = "Megatron-Bridge docs/releases/software-versions.md"
#: why the 25.11 rows list no nemo-evaluator although the release table says "Evaluator 0.2.0"
_EVAL_0_2_0 = ("the release table's 'Evaluator 0.2.0' is not the nemo-evaluator package (its 0.2.0 is of "
               "2026-03-06, after this image; NVIDIA-NeMo/Evaluator's v0.2.0rc* of 2025-08 were NeMo Eval, "
               "nemo-eval): the nemo-evaluator inside is not known")
_MB_DOCS = "Megatron-Bridge docs/versions1.json (main, 2026-08)"

TABLE: tuple[ImageRow, ...] = (
    ImageRow("nvcr.io/nvidia/nemo:25.11",
             {"megatron-bridge": "0.2.0", "megatron-core": "0.15.0"}, (),
             f"{_MB_TABLE} (v0.3.0-v0.6.0), section 'NeMo Framework 25.11' (Megatron Core 'dev:0.15.0')",
             why_not="its megatron-bridge 0.2.0 has no Nemotron 3 Nano recipe "
                     "(recipes/nemotronh/nemotron_3_nano.py first appears in 0.3.0)",
             notes=(_EVAL_0_2_0,)),
    ImageRow("nvcr.io/nvidia/nemo:25.11.nemotron_3_nano",
             {"megatron-bridge": "0.3.0rc0", "megatron-core": "0.16.0rc0"},
             NEMO_STAGES,
             "no release table row: Megatron-Bridge v0.3.0 docs/models/llm/nemotron3.md names this image for the "
             "model; its branch nano-v3 (head 1cedb0a9, 2025-12-13, package_info 0.3.0rc0, pinning Megatron-LM "
             "3cbe5c68 = core 0.16.0rc0) has nemotron_3_nano_finetune_config(**kwargs), which the reference's SFT "
             "config for this image names",
             inferred=True, notes=(_EVAL_0_2_0,)),
    ImageRow("nvcr.io/nvidia/nemo:26.02",
             {"megatron-bridge": "0.3.0", "megatron-core": "0.16.0", "nemo-evaluator": "0.1.74"}, NEMO_STAGES,
             f"{_MB_TABLE} (v0.3.0-v0.6.0), section 'NeMo Framework 26.02' (Megatron Core 'main:0.16.0')",
             notes=("its nemo-evaluator 0.1.74 predates the 0.2 line the eval stage's nemo-evaluator-launcher 0.2.x "
                    "runs on: the eval job refuses it in one line; installing nemo-evaluator-launcher>=0.2.6,<0.3 "
                    "in the job (startup_commands) brings nemo-evaluator 0.2.x",)),
    ImageRow("nvcr.io/nvidia/nemo:26.02.01", {"megatron-bridge": "0.3.1", "megatron-core": "0.16.1"}, NEMO_STAGES,
             f"{_MB_DOCS} '0.3.1 · 26.02.01'; Megatron Core: the Megatron-LM commit v0.3.1 pins (55ac7082 = 0.16.1)"),
    ImageRow("nvcr.io/nvidia/nemo:26.04",
             {"megatron-bridge": "0.4.0", "megatron-core": "0.17.0", "nemo-evaluator": "0.2.5"}, NEMO_STAGES,
             f"{_MB_TABLE} (v0.5.0, v0.6.0), section 'NeMo Framework 26.04'"),
    ImageRow("nvcr.io/nvidia/nemo:26.04.01", {"megatron-bridge": "0.4.2", "megatron-core": "0.17.1"}, NEMO_STAGES,
             f"{_MB_DOCS} '0.4.2 · 26.04.01'; Megatron Core: the Megatron-LM commit v0.4.2 pins (2edffadb = 0.17.1)"),
    ImageRow("nvcr.io/nvidia/nemo:26.06",
             {"megatron-bridge": "0.5.0", "megatron-core": "0.18.0", "nemo-evaluator": "0.2.8"}, NEMO_STAGES,
             f"{_MB_TABLE} (v0.6.0), section 'NeMo Framework 26.06'"),
    ImageRow("nvcr.io/nvidia/nemo:26.06.01", {"megatron-bridge": "0.5.1", "megatron-core": "0.18.2"}, NEMO_STAGES,
             f"{_MB_DOCS} '0.5.1 · 26.06.01'; Megatron Core: the Megatron-LM commit v0.5.1 pins (458c8d0e = 0.18.2)"),
    ImageRow("nvcr.io/nvidia/nemo:26.08", {"megatron-bridge": "0.6.0", "megatron-core": "0.19.0"}, NEMO_STAGES,
             f"{_MB_DOCS} '0.6.0 (latest) · 26.08' and docs/performance-summary.md '26.08 NeMo Container'; "
             "Megatron Core: the Megatron-LM commit v0.6.0 pins (cd4afffa = 0.19.0)",
             notes=("the v0.6.0 tag's package_info.py already says 0.6.1 (the tagged commit bumps it); "
                    "both are the same API line",)),
    ImageRow("nvcr.io/nvidia/nemo-rl:v0.4.0",
             {"nemo-rl": "0.4.0", "megatron-bridge": "0.1.0rc0", "megatron-core": "0.15.0rc3"}, (),
             "NeMo-RL v0.4.0 (c751f811; the README's news at v0.5.0: 'First release with official NGC Container "
             "nvcr.io/nvidia/nemo-rl:v0.4.0'); submodule pins "
             "Megatron-Bridge 62f4704b (0.1.0rc0), Megatron-LM af73aa2c (core 0.15.0rc3)",
             why_not="NeMo-RL's Nemotron 3 Nano guide (docs/guides/nemotron-3-nano.md) names the model-specific "
                     "build nemo-rl:v0.4.0.nemotron_3_nano; this one pins vLLM 0.10.0, the nano-v3 branch 0.11.2"),
    ImageRow("nvcr.io/nvidia/nemo-rl:v0.4.0.nemotron_3_nano", {"nemo-rl": "0.5.0rc0", "megatron-bridge": "0.3.0rc0"},
             ("rl",),
             "no release notes row: NeMo-RL docs/guides/nemotron-3-nano.md (v0.6.0, v0.7.0) names this image; its "
             "branch nano-v3 (90ecaacc, 2025-12-12, the last commit before the model's release; package_info "
             "0.5.0rc0, vLLM 0.11.2, Megatron-Bridge pin 079d5a94 = 0.3.0rc0) is what the build evidently carries",
             inferred=True),
    ImageRow("nvcr.io/nvidia/nemo-rl:v0.5.0", {"nemo-rl": "0.5.0rc0", "megatron-bridge": "0.3.0rc0"}, ("rl",),
             "NeMo-RL v0.5.0 (6c708930; the README's news at v0.6.0: 'containers are available on NGC "
             "nvcr.io/nvidia/nemo-rl:v0.5.0'); "
             "the tag's package_info.py says 0.5.0rc0; Megatron-Bridge pin 1e9a459b (0.3.0rc0)"),
    ImageRow("nvcr.io/nvidia/nemo-rl:v0.7.0", {"nemo-rl": "0.7.0"}, ("rl",),
             "NeMo-RL v0.7.0 (81aa43dd); docs/guides/nemotron-3-super.md: 'The released NeMo RL base container is "
             "nvcr.io/nvidia/nemo-rl:v0.7.0'; its Megatron-Bridge pin (151168f3) is not in the public history"),
)


#: the NeMo Evaluator line the eval stage writes its run config for: ``nemo-evaluator-launcher``
#: 0.2.x (>= 0.2.6: its env_vars host:/lit: prefixes, export.env_vars; nemo_runspec.evaluation.evaluator),
#: which requires ``nemo-evaluator>=0.2.0,<0.3.0`` (its pyproject at tag
#: nemo-evaluator-launcher-v0.2.6, 2026-05-21, the last launcher release). NeMo Evaluator
#: v0.3.0 (2026-06-03) replaced the launcher with ``nel eval run`` and a new config
#: (services, benchmarks, cluster.node_pools); the launcher package there holds only examples.
EVALUATOR_LAUNCHER = ("0.2.6", "0.3.0")
EVALUATOR_CORE = ("0.2.0", "0.3.0")


def normalize_image(image: str) -> str:
    """An image reference in the table's form: ``docker://`` dropped, pyxis's
    ``nvcr.io#nvidia/...`` as ``nvcr.io/nvidia/...``."""
    ref = image.strip().removeprefix("docker://")
    host, hash_, rest = ref.partition("#")
    return f"{host}/{rest}" if hash_ and "/" not in host else ref


def row_for(image: str | None) -> ImageRow | None:
    """The table's row for ``image`` (any of its spellings), or None."""
    if not image:
        return None
    wanted = normalize_image(image)
    return next((row for row in TABLE if row.image == wanted), None)


def stage_of(recipe_name: str) -> str:
    """The table's stage of a recipe: ``nano3/sft`` -> ``sft``, ``nano3/data/prep/rl`` -> ``prep``."""
    parts = recipe_name.split("/")
    return "prep" if parts[1:3] == ["data", "prep"] else parts[-1]


def image_problem(recipe_name: str, image: str | None) -> str | None:
    """Why a recipe's runspec ``image`` disagrees with the table (None: it agrees)."""
    if not image:
        return None
    row, stage = row_for(image), stage_of(recipe_name)
    if row is None:
        return f"{recipe_name} names {image}, which the compatibility table (nemotron.training.versions) does not list"
    if stage not in row.stages:
        why = row.why_not or f"the table lists it for {', '.join(row.stages)}"
        return f"{recipe_name} names {image}, which is not an image for {stage}: {why}"
    return None


def rows_for_stage(stage: str) -> list[ImageRow]:
    """The images a nano3 stage may name, oldest first."""
    return [row for row in TABLE if stage in row.stages]


def markdown_table() -> str:
    """The table as docs/training.md prints it (a test keeps the page and this in step)."""
    from . import bridge_lines, rl_lines

    head = ("| image | megatron-bridge | megatron-core | nemo-rl | nemo-evaluator | nano3 stages | API line | source |\n"
            "|---|---|---|---|---|---|---|---|")
    rows, notes = [head], []
    for i, row in enumerate(TABLE, 1):
        v = row.versions
        if "rl" in row.stages:
            line = rl_lines.line_for(v["nemo-rl"])
        elif row.stages:
            line = bridge_lines.line_for(v["megatron-bridge"])
        else:
            line = None
        stages = ", ".join(row.stages) or f"none: {row.why_not}"
        kind = "inferred" if row.inferred else "cited"
        rows.append(f"| `{row.image}` | {v.get('megatron-bridge', '-')} | {v.get('megatron-core', '-')} | "
                    f"{v.get('nemo-rl', '-')} | {v.get('nemo-evaluator', '-')} | {stages} | "
                    f"{line.name if line else '-'} | {kind} [{i}] |")
        notes.append(f"{i}. {row.source}" + "".join(f"; {n}" for n in row.notes))
    return "\n".join(rows) + "\n\n" + "\n".join(notes) + "\n"
