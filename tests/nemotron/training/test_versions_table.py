"""The compatibility table: every recipe names an image it knows, every row cites a source,
and the version arithmetic the checks rely on."""

from __future__ import annotations

from pathlib import Path

import pytest

from nemo_runspec import parse
from nemotron.recipes import RECIPES_DIR
from nemotron.training import bridge_lines, rl_lines
from nemotron.training.versions import (
    LIBRARIES,
    TABLE,
    image_problem,
    in_range,
    normalize_image,
    parse_version,
    row_for,
    stage_of,
)


def _recipes() -> list[Path]:
    return sorted(p for p in RECIPES_DIR.rglob("*.py") if "\n# [tool.runspec]\n" in p.read_text(encoding="utf-8"))


@pytest.mark.parametrize("script", _recipes(), ids=lambda p: str(p.relative_to(RECIPES_DIR)))
def test_every_recipe_names_an_image_the_table_lists_for_it(script):
    spec = parse(script)
    assert image_problem(spec.name, spec.image) is None


def test_a_recipe_naming_an_unknown_or_wrong_image_is_reported():
    assert "does not list" in image_problem("nano3/sft", "nvcr.io/nvidia/nemo:25.07")
    assert "no Nemotron 3 Nano recipe" in image_problem("nano3/sft", "nvcr.io/nvidia/nemo:25.11")
    assert "not an image for rl" in image_problem("nano3/rl", "nvcr.io/nvidia/nemo:26.08")
    assert image_problem("nano3/rl", "nvcr.io#nvidia/nemo-rl:v0.7.0") is None  # pyxis spelling


def test_the_reference_images_and_the_newest_are_rows():
    for image in ("nvcr.io/nvidia/nemo:25.11.nemotron_3_nano", "nvcr.io/nvidia/nemo-rl:v0.4.0.nemotron_3_nano",
                  "nvcr.io/nvidia/nemo:26.08", "nvcr.io/nvidia/nemo-rl:v0.7.0"):
        assert row_for(image) is not None and row_for(image).stages, image
    assert row_for("nvcr.io/nvidia/nemo:26.08").versions["megatron-bridge"] == "0.6.0"
    assert row_for("nvcr.io/nvidia/nemo-rl:v0.7.0").versions["nemo-rl"] == "0.7.0"


@pytest.mark.parametrize("row", TABLE, ids=lambda r: r.image.rpartition("/")[2])
def test_every_row_cites_its_source_and_its_versions_have_a_line(row):
    assert len(row.source) > 40 and set(row.versions) <= set(LIBRARIES)
    assert bool(row.stages) != bool(row.why_not)
    assert row.image == normalize_image(row.image)
    if {"pretrain", "sft"} & set(row.stages):
        assert bridge_lines.line_for(row.versions["megatron-bridge"]) is not None
    if "rl" in row.stages:
        assert rl_lines.line_for(row.versions["nemo-rl"]) is not None
    for version in row.versions.values():
        parse_version(version)


def test_rows_are_unique_and_the_inferred_ones_say_so():
    images = [row.image for row in TABLE]
    assert len(images) == len(set(images))
    inferred = {row.image for row in TABLE if row.inferred}
    assert inferred == {"nvcr.io/nvidia/nemo:25.11.nemotron_3_nano", "nvcr.io/nvidia/nemo-rl:v0.4.0.nemotron_3_nano"}


def test_version_order_and_ranges():
    assert parse_version("0.3.0rc0") < parse_version("0.3.0") < parse_version("0.3.1+abc123") < parse_version("0.4.0")
    assert parse_version("v0.7.0") == parse_version("0.7.0")
    assert in_range("0.6.1+deadbee", "0.6.0", "0.7.0") and not in_range("0.7.0", "0.6.0", "0.7.0")
    assert in_range("0.5.0rc0", "0.4.0", "0.6.0") and not in_range("0.2.2", "0.3.0rc0", "0.3.1")
    with pytest.raises(ValueError):
        parse_version("main")


def test_stage_of_a_recipe():
    assert [stage_of(n) for n in ("nano3/sft", "nano3/data/prep/rl", "nano3/eval")] == ["sft", "prep", "eval"]


def test_the_lines_cover_every_supported_version_once():
    for module in (bridge_lines, rl_lines):
        lines = module.LINES
        for before, after in zip(lines, lines[1:], strict=False):
            assert before.until == after.since  # no gap, no overlap


@pytest.mark.parametrize("row", [r for r in TABLE if "eval" in r.stages and "nemo-evaluator" in r.versions],
                         ids=lambda r: r.image.rpartition("/")[2])
def test_an_eval_image_whose_evaluator_the_eval_job_refuses_says_so(row):
    """The eval job refuses a nemo-evaluator outside the launcher's line (version_check.check_evaluator):
    a row listing such a version for eval must say what to do there (the launcher brings its own)."""
    from nemotron.training.versions import EVALUATOR_CORE

    if not in_range(row.versions["nemo-evaluator"], *EVALUATOR_CORE):
        assert any("nemo-evaluator-launcher" in note for note in row.notes), row.image


def test_evaluator_versions_are_of_the_package_the_eval_job_reads():
    """The 25.11 release table's 'Evaluator 0.2.0' is NeMo Eval (nemo-eval, NVIDIA-NeMo/Evaluator's
    v0.2.0rc* of 2025-08); the nemo-evaluator package reached 0.2.0 only on 2026-03-06, after
    every 25.11 build: the table must not claim it for those images."""
    for image in ("nvcr.io/nvidia/nemo:25.11", "nvcr.io/nvidia/nemo:25.11.nemotron_3_nano"):
        assert "nemo-evaluator" not in row_for(image).versions, image
