"""Data-prep configs are checked against a typed schema before anything runs or is submitted.

The schema (nemotron.data_prep.schema) is checked in the CLI (local run, dry run,
submission) and in the data-prep entry point on the node; every bad value is one
line naming the file and line, or the override, and the key.
"""

from __future__ import annotations

import copy
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from nemo_runspec.errors import ConfigError
from nemotron.data_prep.cli import load_config
from nemotron.data_prep.schema import SETTINGS, key_table, keys
from nemotron.data_prep.validation import check_config, settings_for
from tests.nemotron_cli import NEMOTRON

REPO = Path(__file__).resolve().parents[3]
RECIPES = REPO / "src/nemotron/recipes/nano3"
STAGE_DIRS = {"pretrain": "stage0_pretrain", "sft": "stage1_sft", "rl": "stage2_rl"}


def config_path(stage: str, name: str = "tiny") -> Path:
    return RECIPES / STAGE_DIRS[stage] / "config/data_prep" / f"{name}.yaml"


def tiny(stage: str) -> dict:
    """The shipped tiny config of ``stage`` as a plain dict."""
    return OmegaConf.to_container(load_config(config_path(stage)), resolve=False)


def with_value(data: dict, dotted: str, value) -> dict:
    out = copy.deepcopy(data)
    node = out
    *parents, leaf = dotted.split(".")
    for p in parents:
        node = node.setdefault(p, {})
    node[leaf] = value
    return out


def one_line(exc: BaseException) -> str:
    msg = str(exc)
    assert len(msg.splitlines()) == 1 and "Traceback" not in msg, msg
    return msg


# (key, bad values, words the message must contain); the stages that have the key are tested.
BAD = [
    ("run", ["x", 3], "a mapping"),
    ("data_root", [5, True, ["a"]], "a string or null"),
    ("name", [5, ["x"]], "a string or null"),
    ("output_dir", [5, False], "a string or null"),
    ("num_shards", [0, -1, 1.5, "abc", True, None, "4"], "an integer >= 1"),
    ("split", [True, None, {"a": 1}], "a string or a number or a list of numbers"),
    ("seed", ["x", 1.5, True, None], "an integer"),
    ("workers", [-1, "2", 1.5, True], "an integer >= 0 or null"),
    ("sample", ["abc", 1.5, True, 0, -3, "100"], "an integer >= 1 or null"),
    ("max_bad_fraction", [1.5, -0.1, "x", True], "a number between 0 and 1 or null"),
    ("max_record_bytes", [0, -1, "1MB", 1.5, True, None], "an integer >= 1"),
    ("min_records", [0, "10", 2.5, True, None], "an integer >= 1"),
    ("allow_empty", ["yes", 1, None], "true or false"),
    ("pack_size", [0, "4096", 1.5, True], "an integer >= 1"),
    ("packing", ["first-fit", 5, None], "one of 'first_fit', 'sequential'"),
    ("too_long", ["cut", True], "one of 'drop', 'truncate'"),
    ("require_answer", ["yes", 1, None], "true or false"),
    ("dedupe", ["no", 0], "true or false"),
    ("task_name", [5, None, ["math"]], "a string"),
    ("publish", ["x", 5], "a mapping"),
    ("publish.name", [5, ["a"]], "a string or null"),
    ("publish.aliases", ["latest", None, 3], "a list of strings"),
    ("publish.copy", ["yes", 1], "true or false"),
    ("input", ["x", None, ["a"]], "a mapping"),
    ("input.paths", [5, None, {"a": 1}], "a list of strings or a string"),
    ("input.format", ["jsnl", 5], "one of 'auto', 'jsonl', 'parquet', 'hf'"),
    ("input.text_field", [5, None], "a string"),
    ("input.messages_field", [5, None], "a string"),
    ("input.prompt_field", [5, ["p"]], "a string"),
    ("input.answer_field", [5, True], "a string"),
    ("tokenizer", ["tok", None], "a mapping"),
    ("tokenizer.path", [5, None], "a string"),
    ("tokenizer.add_eod", ["yes", 1], "true or false"),
    ("tokenizer.eod_token", [5, True], "a string or null"),
    ("tokenizer.chat_template", [5, ["t"]], "a string or null"),
    ("tokenizer.pad_token", [5], "a string or null"),
]
# A bad item of a list is named by its index: 'publish.aliases[1]'.
ITEMS = [
    ("publish.aliases", [[5], ["a", True]], "must be a string, got"),
    ("input.paths", [[5], ["a.jsonl", ["b"]]], "must be a string, got"),
    ("split", [["x"], [1, True]], "must be a number, got"),
]
# Values of the right type that a validator refuses (the message says why).
REFUSED = [
    ("split", ["0,0,0", "-1,2", [1, 2, 3, 4]], "non-negative weights"),
    ("split", ["a,b", "1,x"], "is not a list of numbers"),
    ("input.paths", [[], "", [""]], "at least one non-empty path"),
    ("publish.name", ["bad name!", "-x"], "invalid artifact name"),
    ("publish.aliases", [["v3"], ["3x"], ["a b"]], "invalid alias"),
]
CASES = [
    pytest.param(stage, key, value, words, id=f"{stage}-{key}={value!r}")
    for key, values, words in BAD + ITEMS + REFUSED
    for stage, model in SETTINGS.items()
    if key in keys(model)
    for value in values
]


@pytest.mark.parametrize("stage, key, value, words", CASES)
def test_each_bad_value_of_each_key_is_one_line_naming_the_key(stage, key, value, words) -> None:
    data = with_value(tiny(stage), key, value)
    with pytest.raises(ConfigError) as err:
        settings_for(data, stage)
    msg = one_line(err.value)
    assert f"'{key}" in msg and words in msg, msg
    assert err.value.key is not None and err.value.key.startswith(key)


def test_every_schema_key_has_bad_values_tested() -> None:
    """A key added to the schema without a bad-value case above fails here."""
    tested = {key for key, _, _ in BAD}
    for stage, model in SETTINGS.items():
        missing = set(keys(model)) - tested
        assert not missing, f"{stage}: no bad values tested for {sorted(missing)}"


def test_rl_split_has_two_weights_and_the_others_three() -> None:
    with pytest.raises(ConfigError, match=r"weights for train, validation"):
        settings_for(with_value(tiny("rl"), "split", "90,5,5"), "rl")
    assert settings_for(with_value(tiny("pretrain"), "split", "90,5,5"), "pretrain").fractions()["test"] == 0.05


@pytest.mark.parametrize(
    "stage, key, value, hint",
    [
        ("pretrain", "smaple", 5, "did you mean 'sample'?"),
        ("sft", "input.mesages_field", "m", "did you mean 'input.messages_field'?"),
        ("rl", "publish.alias", ["x"], "did you mean 'publish.aliases'?"),
        ("pretrain", "pack_size", 512, "'pack_size' is a key of the sft data prep, not this one"),
        ("rl", "tokenizer", {"path": "t"}, "'tokenizer' is a key of the pretrain, sft data prep"),
        ("pretrain", "zzzz", 1, "valid: allow_empty, data_root, input, max_bad_fraction"),
    ],
)
def test_unknown_keys_get_a_did_you_mean(stage, key, value, hint) -> None:
    with pytest.raises(ConfigError) as err:
        settings_for(with_value(tiny(stage), key, value), stage)
    msg = one_line(err.value)
    assert msg.startswith(f"unknown key '{key}'") and hint in msg, msg


def test_missing_required_keys_are_named() -> None:
    data = tiny("pretrain")
    del data["input"]["paths"]
    with pytest.raises(ConfigError, match=r"^missing key 'input.paths' .*\(e.g. input.paths: "):
        settings_for(data, "pretrain")
    data = tiny("sft")
    del data["tokenizer"]
    with pytest.raises(ConfigError, match=r"^missing key 'tokenizer'"):
        settings_for(data, "sft")


def test_values_from_a_file_name_the_file_and_line(tmp_path) -> None:
    cfg = tmp_path / "mine.yaml"
    cfg.write_text(f"defaults:\n  - {config_path('sft')}\n\ninput:\n  format: jsonl\npacking: first-fit\n")
    loaded = load_config(cfg)
    with pytest.raises(ConfigError) as err:
        settings_for(loaded, "sft", files=[config_path("sft", "default"), config_path("sft"), cfg])
    assert str(err.value) == (
        f"{cfg}:6: key 'packing' must be one of 'first_fit', 'sequential', got string 'first-fit' "
        "(did you mean 'first_fit'?; valid: first_fit, sequential)"
    )


def test_a_quoted_number_in_a_file_gets_an_unquote_hint(tmp_path) -> None:
    cfg = tmp_path / "mine.yaml"
    cfg.write_text(f"defaults: [{config_path('rl')}]\nnum_shards: '8'\n")
    with pytest.raises(ConfigError) as err:
        settings_for(load_config(cfg), "rl", files=[cfg])
    assert str(err.value) == (
        f"{cfg}:2: key 'num_shards' must be an integer >= 1, got string '8' "
        "(a quoted value is a string: write num_shards: 8)"
    )


def test_values_from_an_override_name_the_override() -> None:
    cfg = load_config(config_path("pretrain"), ["sample=1.5"])
    with pytest.raises(ConfigError) as err:
        settings_for(cfg, "pretrain", files=[config_path("pretrain")], overrides=["workers=1", "sample=1.5"])
    assert str(err.value) == (
        "key 'sample' must be an integer >= 1 or null, got 1.5 in override 'sample=1.5' (e.g. sample=1000)"
    )


def test_interpolations_pass_the_cli_check_and_are_checked_resolved_on_the_node(monkeypatch) -> None:
    data = tiny("pretrain")
    data["tokenizer"]["path"] = "${art:tok,path}"
    data["input"]["paths"] = ["${oc.env:RAW_DIR}/*.jsonl"]
    data["workers"] = "${oc.env:N_WORKERS}"
    data["publish"]["name"] = "${oc.env:ART_NAME}"
    cfg = OmegaConf.create(data)
    check_config(cfg, "pretrain")  # nothing resolvable here: no registry, no env vars
    monkeypatch.setenv("N_WORKERS", "3")  # an env var is text: read as YAML where the key is typed
    monkeypatch.setenv("RAW_DIR", "/raw")
    monkeypatch.setenv("ART_NAME", "ds")
    cfg.tokenizer.path = "/tok"
    settings = settings_for(cfg, "pretrain")
    assert (settings.workers, settings.input.paths, settings.publish.name) == (3, ["/raw/*.jsonl"], "ds")
    monkeypatch.setenv("N_WORKERS", "many")
    with pytest.raises(ConfigError, match=r"^key 'workers' must be an integer >= 0 or null, got string 'many'"):
        settings_for(cfg, "pretrain")
    monkeypatch.delenv("N_WORKERS")
    with pytest.raises(ConfigError, match=r"cannot resolve the value of key 'workers'.*N_WORKERS"):
        settings_for(cfg, "pretrain")


def test_cli_check_still_refuses_non_interpolated_mistakes() -> None:
    cfg = OmegaConf.create(with_value(tiny("sft"), "pack_size", "${oc.env:PACK}") | {"too_long": "cut"})
    with pytest.raises(ConfigError, match=r"^key 'too_long' must be one of"):
        check_config(cfg, "sft")


@pytest.mark.parametrize("stage", list(SETTINGS))
@pytest.mark.parametrize("name", ["default", "tiny"])
def test_shipped_configs_validate(stage, name) -> None:
    cfg = load_config(config_path(stage, name))
    check_config(cfg, stage)
    settings = settings_for(cfg, stage)
    assert settings.num_shards == cfg.num_shards and settings.input.paths == list(cfg.input.paths)


def test_absent_keys_take_the_schema_defaults() -> None:
    s = settings_for({"input": {"paths": "a.jsonl"}}, "rl")
    assert (s.num_shards, s.split, s.dedupe, s.publish.aliases, s.publish.copy_) == (1, "95,5", True, ["latest"], False)
    assert s.fractions() == {"train": 0.95, "validation": pytest.approx(0.05)}


def test_run_functions_refuse_a_bad_config_before_writing_anything(tmp_path) -> None:
    from nemotron.data_prep.pretrain import run_pretrain

    out = tmp_path / "out"
    cfg = {"input": {"paths": [str(tmp_path / "none.jsonl")]}, "tokenizer": {"path": "t"},
           "output_dir": str(out), "sample": 1.5}
    with pytest.raises(ConfigError, match="key 'sample' must be an integer"):
        run_pretrain(cfg)
    assert not out.exists()


def test_docs_list_every_key_with_its_type() -> None:
    """docs/data-prep.md holds the table generated from the schema (python -m nemotron.data_prep.schema)."""
    docs = (REPO / "docs/data-prep.md").read_text()
    assert key_table() in docs


# --- end to end: the CLI and the data-prep script ---------------------------------------------


def _env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("NEMOTRON_")}
    env.update(NEMOTRON_HOME=str(tmp_path / "home"), COLUMNS="200", TMPDIR=str(tmp_path))
    return env


def _nemotron(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(NEMOTRON), *args], cwd=tmp_path, env=_env(tmp_path), capture_output=True,
                          text=True, timeout=120)


def _assert_config_error(proc: subprocess.CompletedProcess[str], *fragments: str) -> str:
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("error: ") and "Traceback" not in proc.stderr
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    return lines[0]


def test_cli_dry_run_refuses_a_bad_value(tmp_path) -> None:
    proc = _nemotron(tmp_path, "nano3", "data", "prep", "pretrain", "-c", "tiny", "--dry-run", "sample=abc")
    _assert_config_error(proc, "'sample'", "an integer >= 1 or null", "'abc'", "override 'sample=abc'")
    assert "Dry run" not in proc.stdout
    assert not (tmp_path / "home").exists()


@pytest.mark.parametrize(
    "stage, override, fragments",
    [
        ("pretrain", "num_shards=0", ("'num_shards'", ">= 1", "got 0")),
        ("pretrain", "sample=1.5", ("'sample'", "got 1.5")),
        ("pretrain", "sample=true", ("'sample'", "got true")),
        ("sft", "packing=first-fit", ("'packing'", "did you mean 'first_fit'?")),
        ("rl", "split=90,5,5", ("'split'", "train, validation")),
        ("rl", "+smaple=3", ("unknown key 'smaple'", "did you mean 'sample'?")),
        ("sft", "pack_size=[1,2", ("override 'pack_size=[1,2'", "unclosed '['")),
    ],
)
def test_cli_refuses_bad_values_before_submitting_to_slurm(tmp_path, stage, override, fragments) -> None:
    env_toml = tmp_path / "env.toml"
    env_toml.write_text(textwrap.dedent("""
        [cluster]
        executor = "slurm"
        account = "acct"
        partition = "cpu"
    """))
    args = ("nano3", "data", "prep", stage, "-c", "tiny", "--batch", "cluster", "--dry-run", "--env-file", str(env_toml))
    good = _nemotron(tmp_path, *args)  # the same command without the bad value renders the sbatch script
    assert good.returncode == 0, good.stderr
    assert "#!/bin/bash" in good.stdout
    _assert_config_error(_nemotron(tmp_path, *args, override), *fragments)


def test_cli_accepts_interpolations_that_resolve_on_the_node(tmp_path) -> None:
    proc = _nemotron(tmp_path, "nano3", "data", "prep", "sft", "-c", "tiny", "--dry-run",
                     "tokenizer.path=${art:nano3-tokenizer,path}", "workers=${oc.env:SLURM_CPUS_ON_NODE}")
    assert proc.returncode == 0, proc.stderr
    assert "${art:nano3-tokenizer,path}" in proc.stdout


def test_cli_names_the_file_and_line_of_a_bad_value(tmp_path) -> None:
    cfg = tmp_path / "mine.yaml"
    cfg.write_text(f"defaults: [{config_path('pretrain')}]\nseed: 12.5\n")
    proc = _nemotron(tmp_path, "nano3", "data", "prep", "pretrain", "-c", str(cfg), "--dry-run")
    _assert_config_error(proc, f"{cfg}:2: key 'seed' must be an integer, got 12.5")


def test_data_prep_script_refuses_a_hand_edited_train_yaml(tmp_path) -> None:
    """On the node: the job's train.yaml edited by hand is refused before any input is read."""
    train = tmp_path / "train.yaml"
    data = tiny("pretrain")
    data["data_root"] = str(RECIPES / "sample_data")
    data["num_shards"] = 0
    train.write_text(OmegaConf.to_yaml(OmegaConf.create(data)))
    line = 1 + next(i for i, ln in enumerate(train.read_text().splitlines()) if ln.startswith("num_shards:"))
    script = RECIPES / "stage0_pretrain/data_prep.py"
    proc = subprocess.run([sys.executable, str(script), "--config", str(train)], cwd=tmp_path, env=_env(tmp_path),
                          capture_output=True, text=True, timeout=120)
    _assert_config_error(proc, f"{train}:{line}: key 'num_shards' must be an integer >= 1, got 0")
    assert not (tmp_path / "home").exists()  # nothing planned or written
    proc = subprocess.run([sys.executable, str(script), "--config", str(train), "num_shards=2", "sample=abc"],
                          cwd=tmp_path, env=_env(tmp_path), capture_output=True, text=True, timeout=120)
    _assert_config_error(proc, "key 'sample'", "in override 'sample=abc'")


def test_the_module_prints_the_key_table_the_docs_name():
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-m", "nemotron.data_prep.schema"], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0 and out.stdout.strip() == key_table().strip()
