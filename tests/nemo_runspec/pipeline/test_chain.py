"""Pipelines (nemo_runspec.pipeline.step, nemo_runspec.pipeline.chain) with real recipe scripts run here.

Two small recipes: ``make`` writes a file and publishes it; ``use`` consumes
that artifact through ``${art:inp,path}`` when it starts and publishes its own
output. The registry is a real file registry under the test's tmp dir.
"""

from __future__ import annotations

import json
import os
import textwrap
from pathlib import Path

import pytest

from nemo_runspec import pipeline
from nemo_runspec.artifacts.registry import ArtifactRegistry
from nemo_runspec.cli_context import split_global_args
from nemo_runspec.errors import NemoRunspecError
from nemo_runspec.pipeline.step import Step, artifact_name, consumed_artifacts

HEADER = """\
# /// script
# [tool.runspec]
# schema = "1"
# name = "test/{name}"
#
# [tool.runspec.run]
# launch = "direct"
#
# [tool.runspec.config]
# dir = "./config_{name}"
# default = "default"
# ///
"""

MAKE = HEADER.format(name="make") + textwrap.dedent("""
    import sys, yaml, pathlib
    from nemo_runspec.artifacts.registry import get_registry
    cfg = yaml.safe_load(open(sys.argv[sys.argv.index("--config") + 1]))
    if cfg.get("fail"):
        sys.exit(7)
    out = pathlib.Path("made.txt").absolute()
    out.write_text(cfg["text"])
    get_registry().publish(cfg["publish"]["name"], out)
""")

USE = HEADER.format(name="use") + textwrap.dedent("""
    import sys, pathlib
    from omegaconf import OmegaConf
    from nemo_runspec.config.resolvers import register_resolvers
    register_resolvers()
    cfg = OmegaConf.load(sys.argv[sys.argv.index("--config") + 1])
    text = pathlib.Path(cfg.inp).read_text()
    out = pathlib.Path("used.txt").absolute()
    out.write_text(text.upper() + cfg.suffix)
    from nemo_runspec.artifacts.registry import get_registry
    get_registry().publish(cfg.publish.name, out)
""")


@pytest.fixture
def recipes(tmp_path: Path, monkeypatch) -> dict:
    root = tmp_path / "recipes"
    for name, body, config in (
        ("make", MAKE, "text: hello\nfail: false\npublish:\n  name: made\n"),
        ("use", USE, "run:\n  inp: made:latest\ninp: ${art:inp,path}\nsuffix: '!'\npublish:\n  name: used\n"),
    ):
        (root / f"config_{name}").mkdir(parents=True)
        (root / f"config_{name}" / "default.yaml").write_text(config)
        (root / f"{name}.py").write_text(body)
    registry = tmp_path / "registry"
    monkeypatch.setenv("NEMOTRON_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("NEMOTRON_ARTIFACTS_ROOT", str(registry))
    monkeypatch.delenv("NEMOTRON_ENV_FILE", raising=False)
    monkeypatch.chdir(tmp_path)
    steps = [Step("make", root / "make.py"), Step("use", root / "use.py")]
    return {"steps": steps, "registry": registry, "root": root}


def compiled(steps, *words: str, resume: bool = True):
    gctx, rest = split_global_args(list(words))
    return pipeline.compile_pipeline(steps, gctx, rest, resume=resume)


def quiet(_msg: str) -> None:
    pass


# --- overrides and stage selection ------------------------------------------------------


def test_overrides_go_to_their_stage_and_star_to_all():
    routed = pipeline.split_stage_overrides(["make.text=a", "*.x=1", "+use.new=2"], ["make", "use"])
    assert routed == {"make": ["text=a", "x=1"], "use": ["x=1", "+new=2"]}


@pytest.mark.parametrize(("item", "words"), [
    ("text=a", "names no stage"),
    ("mkae.text=a", "did you mean 'make'"),
])
def test_a_bad_override_is_one_line_naming_it(item, words):
    with pytest.raises(NemoRunspecError) as exc:
        pipeline.split_stage_overrides([item], ["make", "use"])
    assert words in str(exc.value) + str(getattr(exc.value, "hint", "")) and "\n" not in str(exc.value)


def test_select_stages_by_name_and_range():
    steps = [Step(n, Path(f"/x/{n}.py")) for n in ("a", "b", "c", "d")]
    assert [s.name for s in pipeline.select_stages(steps, "d,b")] == ["b", "d"]
    assert [s.name for s in pipeline.select_stages(steps, "b:c")] == ["b", "c"]
    assert [s.name for s in pipeline.select_stages(steps, ":b")] == ["a", "b"]
    assert [s.name for s in pipeline.select_stages(steps, None)] == ["a", "b", "c", "d"]
    with pytest.raises(NemoRunspecError, match="no stage 'e'"):
        pipeline.select_stages(steps, "a:e")


# --- the graph ------------------------------------------------------------------------


def test_graph_follows_consumed_and_published_artifacts(recipes):
    plans = compiled(recipes["steps"])
    assert [(p.name, p.depends_on, p.publishes, p.skip) for p in plans] == [
        ("make", (), "made", False), ("use", ("make",), "used", False)]
    assert dict(plans[1].consumes) == {"inp": "made:latest"}
    assert pipeline.graph_lines(plans)[1].startswith("use <- make -> used")
    assert consumed_artifacts(plans[0].job.job_config) == {}
    assert artifact_name("art://made:v3") == "made"


def test_consuming_what_a_later_stage_publishes_is_refused(recipes):
    make, use = recipes["steps"]
    with pytest.raises(NemoRunspecError, match="later stage make publishes"):
        compiled([use, make], "make.text=x")


def test_a_missing_outside_input_fails_before_anything_runs_but_a_dry_run_shows_it(recipes):
    use = recipes["steps"][1]
    with pytest.raises(NemoRunspecError, match="'made:latest' .* not in the registry"):
        compiled([use])
    plans = compiled([use], "--dry-run")
    assert not plans[0].skip


def test_the_key_changes_with_the_config_and_with_an_upstream_key(recipes):
    a = compiled(recipes["steps"])
    b = compiled(recipes["steps"], "make.text=other")
    c = compiled(recipes["steps"], "use.suffix=?")
    assert a[0].key != b[0].key and a[1].key != b[1].key  # upstream change reaches downstream
    assert a[0].key == c[0].key and a[1].key != c[1].key
    assert compiled(recipes["steps"])[1].key == a[1].key  # stable


# --- running here -----------------------------------------------------------------------


def test_run_local_chains_stages_then_a_rerun_skips_what_exists(recipes):
    plans = compiled(recipes["steps"])
    assert pipeline.run_local(plans, out=quiet) == 0
    reg = ArtifactRegistry(recipes["registry"])
    used = reg.resolve("used:latest")
    assert Path(used.path).read_text() == "HELLO!"  # use read what make published, at its start
    assert used.metadata["pipe_key"] == plans[1].key and used.metadata["pipe_id"].startswith("test-pipe-")

    again = compiled(recipes["steps"])
    assert [p.skip for p in again] == [True, True]
    messages: list[str] = []
    assert pipeline.run_local(again, out=messages.append) == 0
    assert all("skipped" in m for m in messages) and reg.resolve("used:latest").version == 1

    changed = compiled(recipes["steps"], "use.suffix=?")
    assert [p.skip for p in changed] == [True, False]
    pipeline.run_local(changed, out=quiet)
    assert Path(reg.resolve("used:latest").path).read_text() == "HELLO?"
    assert [p.skip for p in compiled(recipes["steps"], resume=False)] == [False, False]


def test_a_failing_stage_stops_the_chain_with_its_exit_code(recipes):
    messages: list[str] = []
    code = pipeline.run_local(compiled(recipes["steps"], "make.fail=true"), out=messages.append)
    assert code == 7
    assert any("make failed (exit 7)" in m and "not run: use" in m for m in messages)
    assert not (recipes["registry"] / "used").exists()


def test_upstream_rerun_forces_downstream_even_if_its_output_exists(recipes):
    pipeline.run_local(compiled(recipes["steps"]), out=quiet)
    # someone publishes another 'made' outside the pipeline: make's output no longer matches its key
    ArtifactRegistry(recipes["registry"]).publish("made", recipes["root"] / "make.py")
    plans = compiled(recipes["steps"])
    assert [p.skip for p in plans] == [False, False]
    assert "make runs first" in plans[1].reason


def test_a_stage_with_nothing_to_do_is_skipped_with_its_reason_even_without_resume(recipes):
    """Step.skip_when: asked with the compiled job; a reason skips the stage (whatever --no-resume
    says) and is shown; None runs it as usual."""
    asked: list[str] = []

    def nothing_to_do(job) -> str | None:  # noqa: ANN001 - a CompiledJob
        asked.append(job.runspec.name)
        return "suffix is empty: nothing to add" if job.train_config.suffix == "" else None

    steps = [recipes["steps"][0], Step("use", recipes["root"] / "use.py", skip_when=nothing_to_do)]
    plans = compiled(steps, "use.suffix=", resume=False)
    assert asked == ["test/use"]
    assert [p.skip for p in plans] == [False, True]
    assert plans[1].reason == "skipped: suffix is empty: nothing to add"
    messages: list[str] = []
    assert pipeline.run_local(plans, out=messages.append) == 0
    assert (recipes["registry"] / "made").exists() and not (recipes["registry"] / "used").exists()
    assert any("suffix is empty: nothing to add" in m for m in messages)
    assert [p.skip for p in compiled(steps, resume=False)] == [False, False]  # the reason gone: it runs


# --- the record ------------------------------------------------------------------------


def test_pipe_record_round_trip_and_a_wrong_id_suggests(recipes):
    plans = compiled(recipes["steps"])
    sub = pipeline.PipeSubmission("test-pipe-1", plans)
    path = pipeline.write_record(sub)
    assert path == Path(os.environ["NEMOTRON_HOME"]) / "pipes" / "test-pipe-1.json"
    rec = pipeline.load_record("test-pipe-1")
    assert [s["name"] for s in rec["stages"]] == ["make", "use"] and rec["stages"][1]["depends_on"] == ["make"]
    assert json.loads(path.read_text()) == rec
    with pytest.raises(NemoRunspecError) as exc:
        pipeline.load_record("test-pipe-2")
    assert "test-pipe-1" in str(exc.value) + str(exc.value.hint)


def test_a_stage_config_error_names_the_stage(recipes):
    with pytest.raises(NemoRunspecError) as exc:
        compiled(recipes["steps"], "use.sufix=?")
    assert str(exc.value).startswith("stage use: ") and "sufix" in str(exc.value)


def test_after_a_full_run_a_subset_and_a_new_full_compile_skip_everything(recipes):
    """An input made inside the pipe has one identity whether or not its producer is
    selected: the producer's key (recorded on the artifact), so choosing a subset of
    stages does not retrain, and neither does the full pipe after it."""
    assert pipeline.run_local(compiled(recipes["steps"]), out=quiet) == 0
    make, use = recipes["steps"]
    subset = compiled([use])
    assert [p.skip for p in subset] == [True], subset[0].reason
    assert pipeline.run_local(subset, out=quiet) == 0
    full = compiled(recipes["steps"])
    assert [p.skip for p in full] == [True, True], [p.reason for p in full]
    assert subset[0].key == full[1].key
    # an input published outside the pipe (no pipe key) is its exact version: 'use' reruns
    ArtifactRegistry(recipes["registry"]).publish("made", recipes["root"] / "make.py")
    assert [p.skip for p in compiled([use])] == [False]
