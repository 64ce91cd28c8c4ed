"""RecipeMeta: a recipe command's help panels come from its docstring and runspec."""

from __future__ import annotations

from pathlib import Path

from nemo_runspec import parse
from nemo_runspec.cli.meta import RecipeMeta, parse_command_doc

ROOT = Path(__file__).resolve().parents[3]
PRETRAIN = ROOT / "src/nemotron/recipes/nano3/stage0_pretrain/train.py"

DOC = """Train a thing.

    Prose that is not a panel. Note: colons in prose
    do not start sections.

    Examples:
        nemotron x -c tiny --dry-run
        nemotron x --run dev a.b=1
    Produces:
        model: a checkpoint (checkpoint.save)
    Consumes:
        data: tokens: with a colon (run.data)
        tokenizer:
    """


def test_sections_in_any_order_and_prose_ignored() -> None:
    description, sections = parse_command_doc(DOC)
    assert description == "Train a thing."
    assert sections == {
        "Examples": ["nemotron x -c tiny --dry-run", "nemotron x --run dev a.b=1"],
        "Produces": ["model: a checkpoint (checkpoint.save)"],
        "Consumes": ["data: tokens: with a colon (run.data)", "tokenizer:"],
    }


def test_from_spec_takes_paths_from_the_runspec() -> None:
    spec = parse(PRETRAIN)
    meta = RecipeMeta.from_spec(spec, DOC)
    assert meta.name == spec.name and meta.command_name == "pretrain"
    assert meta.script_path == spec.script_path and meta.config_dir == spec.config_dir
    assert meta.default_config == spec.config.default
    assert meta.input_artifacts == {"data": "tokens: with a colon (run.data)", "tokenizer": ""}
    assert meta.output_artifacts == {"model": "a checkpoint (checkpoint.save)"}
    assert meta.examples[0] == "nemotron x -c tiny --dry-run"


def test_no_docstring() -> None:
    meta = RecipeMeta.from_spec(parse(PRETRAIN), None)
    assert (meta.description, meta.examples, meta.input_artifacts) == ("", [], {})


def test_every_recipe_command_documents_itself() -> None:
    """The shipped commands' docstrings give a description and at least one example
    that names the command itself."""
    from nemotron.cli.commands.nano3 import pretrain, rl, sft

    for module, name in ((pretrain, "pretrain"), (sft, "sft"), (rl, "rl")):
        meta = RecipeMeta.from_spec(module.SPEC, getattr(module, name).__doc__)
        assert meta.description and meta.examples
        assert all(f"nano3 {name}" in e for e in meta.examples)
        assert meta.output_artifacts


def test_paths_given_as_strings_as_the_reference_passes_them(tmp_path, monkeypatch) -> None:
    """The reference's commands give RecipeMeta repository-relative strings; --help lists the configs."""
    from nemo_runspec.cli import panels
    from nemo_runspec.cli.help import recipe_help_blocks

    config_dir = "src/nemotron/recipes/nano3/stage0_pretrain/config"
    monkeypatch.chdir(ROOT)  # where the reference runs its CLI from
    meta = RecipeMeta(name="nano3/pretrain", script_path="src/nemotron/recipes/nano3/stage0_pretrain/train.py",
                      config_dir=config_dir)
    assert meta.config_dir == ROOT / config_dir and meta.script_path == PRETRAIN
    page = panels.render(recipe_help_blocks(meta, "nemotron nano3 pretrain"), 200, False)
    assert "tiny" in page and "(default)" in page and str(ROOT / config_dir) in page
    # from any other directory: relative to the repository that holds the (absolute) script
    monkeypatch.chdir(tmp_path)
    meta = RecipeMeta(name="nano3/pretrain", script_path=str(PRETRAIN), config_dir=config_dir)
    assert meta.config_dir == ROOT / config_dir
    # a dir that is nowhere stays as written, and the help page says it has no configs
    meta = RecipeMeta(name="x", script_path=str(PRETRAIN), config_dir="no/such/dir")
    assert "no *.yaml in" in panels.render(recipe_help_blocks(meta, "nemotron x"), 200, False)
