"""The three data prep stages (pretrain, sft, rl) as data: their recipe scripts, the help
their commands show, and the check of a compiled job's config against its stage's schema.

Kept apart from ``prep.py``, the forkable command, so that file reads as the flow only.
Importing it is cheap (``--help``): pydantic is imported when a config is checked.
"""

from __future__ import annotations

from collections.abc import Sequence

from nemo_runspec import Runspec
from nemo_runspec import parse as parse_runspec
from nemo_runspec.job.compiled import CompiledJob
from nemotron.recipes import RECIPES_DIR

SPECS = {
    "pretrain": parse_runspec(RECIPES_DIR / "nano3/stage0_pretrain/data_prep.py"),
    "sft": parse_runspec(RECIPES_DIR / "nano3/stage1_sft/data_prep.py"),
    "rl": parse_runspec(RECIPES_DIR / "nano3/stage2_rl/data_prep.py"),
}
HELP = """Prepare the {stage} data for Nemotron 3 Nano (Ray).

Examples:
    nemotron nano3 data prep {stage} -c tiny --dry-run
    nemotron nano3 data prep {stage} --run dev num_shards=16 sample=1000
Consumes:
    raw: raw JSONL/Parquet files (input.paths)
    tokenizer: tokenizer.json (tokenizer.path)
Produces:
    data: prepared {stage} data (run.output, e.g. nano3-{stage}-data:latest)
"""


def stage_of(spec: Runspec) -> str:
    """The data-prep stage (``pretrain``, ``sft``, ``rl``) of ``spec``: its key in :data:`SPECS`,
    else the last part of its name (``nano3/data/prep/sft`` -> ``sft``)."""
    return next((stage for stage, s in SPECS.items() if s is spec), spec.name.rsplit("/", 1)[-1])


def check_stage_config(job: CompiledJob, spec: Runspec, overrides: Sequence[str]) -> None:
    """Check ``job``'s config against the schema of ``spec``'s stage: every key typed
    (``${...}`` are checked in the job); a one-line error names the key."""
    from nemotron.data_prep.validation import check_config  # imports pydantic: not at --help time

    check_config(job.train_config, stage_of(spec), overrides=list(overrides))
