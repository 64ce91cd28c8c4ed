"""Our NeMo-RL GRPO entry checked against every supported NeMo-RL release's own source.

NeMo-RL has no usable PyPI release, so it cannot be installed here. Its API as our
entry uses it (signatures, the values ``setup`` returns, the config TypedDicts, the
base GRPO config) is recorded from each release's source by
``scripts/nemo_rl_api.py`` into ``data/nemo_rl-<label>.json``: v0.4.0, the nano-v3
branch (``nemo-rl:v0.4.0.nemotron_3_nano``), v0.5.0, v0.6.0, v0.7.0. These tests drive
``nemotron.training.nemo_rl.run`` with stand-ins whose signatures come from each
manifest, through the line :mod:`nemotron.training.rl_lines` picks for that release's
version, so a renamed parameter, a changed arity or a config key that release does not
have fails here. With ``NEMO_RL_SRC`` set to a NeMo-RL git dir, the manifests
themselves are regenerated and compared.
"""

from __future__ import annotations

import importlib.util
import inspect
import json
import os
from pathlib import Path
from typing import Any

import pytest
from omegaconf import OmegaConf

os.environ.setdefault("HF_DATASETS_OFFLINE", "1")  # local JSON only; never the hub

from nemo_runspec import parse
from nemo_runspec.config import load_config_file
from nemo_runspec.errors import ConfigError
from nemotron.data_prep.rl import run_rl
from nemotron.training import nemo_rl as nrl
from nemotron.training import rl_lines
from nemotron.training.entry import LAUNCHER_KEYS
from nemotron.training.versions import TABLE, row_for

from .manifests import RL_LABELS, rl_manifest, signature_of

ROOT = Path(__file__).resolve().parents[3]
RECIPE = ROOT / "src/nemotron/recipes/nano3/stage2_rl"
LABELS = RL_LABELS
#: the manifest of the NeMo-RL each RL image of the table carries
MANIFEST_OF_IMAGE = {"nvcr.io/nvidia/nemo-rl:v0.4.0": "v0.4.0", "nvcr.io/nvidia/nemo-rl:v0.4.0.nemotron_3_nano": "nano-v3",
                     "nvcr.io/nvidia/nemo-rl:v0.5.0": "v0.5.0", "nvcr.io/nvidia/nemo-rl:v0.7.0": "v0.7.0"}


manifest = rl_manifest


def line_of(m: dict[str, Any]) -> rl_lines.RLLine:
    line = rl_lines.line_for(m["source"]["version"])
    assert line is not None, f"no line for nemo-rl {m['source']['version']}"
    return line


def _api_script() -> Any:
    spec = importlib.util.spec_from_file_location("nemo_rl_api", ROOT / "scripts" / "nemo_rl_api.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# --- the images and the manifests ------------------------------------------------------


def test_the_runspec_names_the_reference_rl_image_and_every_rl_image_has_a_manifest():
    image = parse(RECIPE / "train.py").image
    assert image == "nvcr.io/nvidia/nemo-rl:v0.4.0.nemotron_3_nano"  # the reference's, and NeMo-RL's nano3 guide's
    for row in TABLE:
        if "nemo-rl" not in row.versions:
            continue
        m = manifest(MANIFEST_OF_IMAGE[row.image])
        assert m["source"]["version"] == row.versions["nemo-rl"], row.image  # what its package_info reports
        assert rl_lines.line_for(row.versions["nemo-rl"]) is line_of(m)
    assert "rl" in row_for(image).stages


@pytest.mark.parametrize("label", LABELS)
def test_every_name_the_line_uses_exists_in_the_release(label):
    m = manifest(label)
    assert set(m["names"]) == set(rl_lines.ALL_NAMES), "regenerate the manifests (scripts/nemo_rl_api.py --all)"
    missing = [short for short in line_of(m).names if m["names"][short] is None]
    assert missing == []
    assert m["names"]["setup"]["returns_tuple_of"] == line_of(m).setup_values
    assert set(line_of(m).generation_flags) <= set(m["names"]["configure_generation_config"]["params"])
    assert (m["master_config_kind"] == "BaseModel") == line_of(m).master_config_model


@pytest.mark.parametrize("label", LABELS)
def test_the_logger_call_the_heartbeat_wraps_takes_metrics_then_step(label):
    """A job with [resilience] wraps Logger.log_metrics(metrics, step, ...) (native_resilience.watch_logger)."""
    desc = manifest(label)["names"]["Logger.log_metrics"]
    assert desc is not None and desc["params"][:2] == ["metrics", "step"]


def test_the_examples_the_lines_follow_are_the_releases_own():
    """run_grpo_math.py until 0.5, run_grpo.py from 0.6 (checked in the mirror when NEMO_RL_SRC is set)."""
    src = os.environ.get("NEMO_RL_SRC")
    assert [line.example for line in rl_lines.LINES] == ["examples/run_grpo_math.py", "examples/run_grpo.py",
                                                         "examples/run_grpo.py"]
    if src:
        api = _api_script()
        for label in LABELS:
            read = api.git_reader(src, api.REFS[label])
            assert read(line_of(manifest(label)).example) is not None, label


@pytest.mark.allowed_skip("needs a NeMo-RL git checkout (NEMO_RL_SRC), which a clean clone does not have")
@pytest.mark.parametrize("label", LABELS)
def test_manifest_is_what_the_source_says(label):
    src = os.environ.get("NEMO_RL_SRC")
    if not src:
        pytest.skip("set NEMO_RL_SRC to a NeMo-RL git dir to re-read the source")
    api = _api_script()
    ref = api.REFS[label]
    fresh = api.manifest(api.git_reader(src, ref), rl_lines.ALL_NAMES, ref=ref, commit=api.commit_of(src, ref))
    assert json.loads(json.dumps(fresh)) == manifest(label)


# --- stand-ins shaped like one NeMo-RL release (from its manifest) ----------------------


class Recorder:
    """Stand-ins for one release's objects; every call is bound against that release's
    signature (wrong names or counts raise TypeError) and recorded."""

    def __init__(self, m: dict[str, Any], base: dict[str, Any]) -> None:
        self.m, self.line, self.base = m, line_of(m), base
        self.calls: dict[str, inspect.BoundArguments] = {}

    def function(self, short: str) -> Any:
        sig = signature_of(self.m["names"][short])

        def call(*args: Any, **kwargs: Any) -> Any:
            self.calls[short] = sig.bind(*args, **kwargs)
            return self.result(short, self.calls[short])
        return call

    def result(self, short: str, bound: inspect.BoundArguments) -> Any:
        a = bound.arguments
        if short == "load_config":
            return OmegaConf.create(self.base)
        if short == "get_next_experiment_dir":
            return str(a["base_log_dir"]) + "/exp_001"
        if short == "get_tokenizer":
            return "TOKENIZER"
        if short == "configure_generation_config":
            return {**a["config"], "_pad_token_id": 0}
        if short == "load_response_dataset":
            return _ResponseDatasetLike(self.m, a["data_config"])
        if short == "setup_response_data":
            data = a["data_config"]
            train = _ResponseDatasetLike(self.m, data["train"])
            val = _ResponseDatasetLike(self.m, data["validation"]) if data.get("validation") else None
            envs = {"math": "MATH_ENV_ACTOR"}
            return (("processed", train.formatted_ds["train"]), val and ("processed", val.formatted_ds["train"]),
                    envs, envs)
        if short == "setup":
            return tuple(f"setup[{i}]" for i in range(self.m["names"]["setup"]["returns_tuple_of"]))
        if short == "AllTaskProcessedDataset":
            return ("processed", a["dataset"])
        return f"{short}()"

    def master_config_model(self) -> Any:
        """NeMo-RL 0.7's pydantic MasterConfig: its fields as attributes, extra keys allowed."""
        fields, recorder = self.m["names"]["MasterConfig"]["fields"], self

        class MasterConfig:
            def __init__(self, **config: Any) -> None:
                missing = [f for f in fields if f not in config and f not in ("data_plane", "on_policy_distillation")]
                assert not missing, f"MasterConfig needs {missing}"
                self.__dict__.update(config)
                recorder.calls["MasterConfig"] = inspect.signature(lambda **config: None).bind(**config)
        return MasterConfig

    def remote_class(self, short: str) -> Any:
        assert "ray.remote" in self.m["names"][short]["decorators"]  # so .options().remote() exists
        recorder, sig = self, signature_of(self.m["names"][short])

        class Options:
            def __init__(self, runtime_env: dict[str, Any]) -> None:
                recorder.calls[short + ".options"] = inspect.signature(Options).bind(runtime_env)

            def remote(self, *args: Any, **kwargs: Any) -> str:
                recorder.calls[short] = sig.bind(*args, **kwargs)
                return "MATH_ENV_ACTOR"

        return type(short, (), {"options": staticmethod(lambda **kw: Options(**kw))})

    def importer(self, dotted: str) -> Any:
        short = {v: k for k, v in self.line.names.items()}[dotted]
        if short == "MathEnvironment":
            return self.remote_class(short)
        if short == "MasterConfig":
            return self.master_config_model()
        return self.function(short)


class _ResponseDatasetLike:
    """What ResponseDataset exposes: ``formatted_ds``, read with the real ``datasets`` library
    from the paths and keys we pass, after checking the release's ResponseDataset takes them."""

    def __init__(self, m: dict[str, Any], data: dict[str, Any]) -> None:
        from datasets import load_dataset

        params = m["names"]["ResponseDataset"]["params"]
        path_keys = ("data_path",) if "data_path" in params else ("train_data_path", "val_data_path")
        assert {k for k in (*path_keys, "input_key", "output_key") if k in data} <= set(params)

        def load(path: str | None) -> Any:
            if not path:
                return None
            ds = load_dataset("json", data_files=path, cache_dir=str(Path(path).parent / ".hf-cache"))["train"]
            return ds.map(lambda ex: {"messages": [{"role": "user", "content": ex[data["input_key"]]},
                                                   {"role": "assistant", "content": ex[data["output_key"]]}]})
        first = data.get("data_path") or data.get("train_data_path")
        self.formatted_ds = {"train": load(first), "validation": load(data.get("val_data_path"))}


def _base(m: dict[str, Any]) -> dict[str, Any]:
    """The release's base GRPO config as its load_config returns it (it has no ``defaults``)."""
    assert m["base_config"]["has_defaults"] is False
    return json.loads(json.dumps(m["base_config"]["values"]))


@pytest.fixture(scope="module")
def rl_data(tmp_path_factory) -> Path:
    """A real RL data-prep output (our data prep, not a hand-written file)."""
    root = tmp_path_factory.mktemp("rl")
    (root / "in.jsonl").write_text("".join(
        json.dumps({"prompt": f"What is {i} + {i + 1}?", "answer": 2 * i + 1}) + "\n" for i in range(60)))
    run_rl({"input": {"paths": [str(root / "in.jsonl")]}, "output_dir": str(root / "out"), "num_shards": 2,
            "split": "80,20", "workers": 0})
    return root / "out"


def _our_config(rl_data: Path, tmp_path: Path, *overrides: str) -> dict[str, Any]:
    cfg = load_config_file(RECIPE / "config" / "default.yaml", [
        f"data.train_data_path={rl_data}", f"policy.model_name={tmp_path / 'model'}",
        f"checkpointing.checkpoint_dir={tmp_path / 'ckpt'}", *overrides])
    container = OmegaConf.to_container(cfg, resolve=True)
    for key in LAUNCHER_KEYS:
        container.pop(key, None)
    return container


# --- the run, call by call, per release --------------------------------------------------


@pytest.mark.parametrize("label", LABELS)
def test_run_makes_the_grpo_calls_of_each_release(label, rl_data, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("HF_TOKEN", "hf_" + "a" * 34)
    monkeypatch.setenv("NEMOTRON_TEST_PLAIN", "visible")
    m = manifest(label)
    rec = Recorder(m, _base(m))
    line = rec.line
    assert nrl.run(_our_config(rl_data, tmp_path), [], importer=rec.importer, line=line) == 0
    c = rec.calls

    assert c["load_config"].arguments["config_path"] == nrl.BASE_CONFIG
    master = c["MasterConfig"].arguments["config"] if line.master_config_model else c["setup"].arguments["master_config"]
    # ours on top of the base, the rest of the base kept
    assert master["grpo"]["num_prompts_per_step"] == 64
    assert master["policy"]["dtensor_cfg"] == _base(m)["policy"]["dtensor_cfg"]
    assert "base_config" not in master
    assert master["logger"]["log_dir"].endswith("/exp_001")
    assert master["policy"]["generation"]["_pad_token_id"] == 0  # configure_generation_config's result kept
    assert set(c["configure_generation_config"].arguments) == {"config", "tokenizer", *line.generation_flags}
    assert c["get_tokenizer"].arguments["tokenizer_config"]["name"] == str(tmp_path / "model")
    if line.master_config_model:
        assert c["setup"].arguments["master_config"].grpo["num_prompts_per_step"] == 64  # the model object

    # the data-prep dir became ResponseDataset's files and keys, in the release's layout
    data = master["data"]
    if line.per_split_data:
        assert data["train"] == {"dataset_name": "ResponseDataset", "data_path": str(rl_data / "train.jsonl"),
                                 "input_key": "prompt", "output_key": "answer"}
        assert data["validation"]["data_path"] == str(rl_data / "validation.jsonl")
        assert "train_data_path" not in data and data["default"]["env_name"] == "math"
        assert c["setup_response_data"].arguments["env_configs"]["math"]["num_workers"] == 8
        train = c["setup"].arguments["dataset"][1]
    else:
        assert data["train_data_path"] == str(rl_data / "train.jsonl")
        assert data["val_data_path"] == str(rl_data / "validation.jsonl")
        assert (data["input_key"], data["output_key"]) == ("prompt", "answer")
        assert c["load_response_dataset"].arguments["seed"] == 42
        train = c["setup"].arguments["dataset"][1]
        assert c["AllTaskProcessedDataset"].arguments["max_seq_length"] == 4096
        assert c["TaskDataSpec"].arguments["task_name"] == "math"
        # the environment actor: NeMo-RL's python env, no credential in its runtime_env
        assert c["MathEnvironment"].arguments["cfg"]["num_workers"] == 8
        runtime_env = c["MathEnvironment.options"].arguments["runtime_env"]
        assert runtime_env["env_vars"]["NEMOTRON_TEST_PLAIN"] == "visible" and "HF_TOKEN" not in runtime_env["env_vars"]
    n_train = len((rl_data / "train.jsonl").read_text().splitlines())
    assert len(train) == n_train and train[0]["messages"][1]["content"] == train[0]["answer"]

    # grpo_train gets setup's values in the release's order, with the tokenizer and both env maps
    at = {name: f"setup[{i}]" for i, name in enumerate(rl_lines.SETUP_VALUES[line.setup_values])}
    g = c["grpo_train"].arguments
    loader = "wrapped_dataloader" if "wrapped_dataloader" in g else "dataloader"
    assert (g["policy"], g["policy_generation"], g[loader], g["val_dataloader"]) == (
        at["policy"], at["policy_generation"], at["dataloader"], at["val_dataloader"])
    assert (g["loss_fn"], g["logger"], g["checkpointer"], g["grpo_save_state"], g["master_config"]) == (
        at["loss_fn"], at["logger"], at["checkpointer"], at["grpo_state"], at["master_config"])
    assert g["tokenizer"] == "TOKENIZER" and g["task_to_env"]["math"] == "MATH_ENV_ACTOR"
    assert "async_grpo_train" not in c and "init_ray" in c
    assert f"NeMo-RL GRPO {line.name}, as its {line.example}" in capsys.readouterr().out


@pytest.mark.parametrize("label", LABELS)
def test_async_grpo_goes_to_async_grpo_train(label, rl_data, tmp_path):
    m = manifest(label)
    rec = Recorder(m, _base(m))
    cfg = _our_config(rl_data, tmp_path, "+grpo.async_grpo.enabled=true",
                      "+grpo.async_grpo.max_trajectory_age_steps=2")
    nrl.run(cfg, [], importer=rec.importer, line=rec.line)
    assert "grpo_train" not in rec.calls
    a = rec.calls["async_grpo_train"].arguments
    assert a["max_trajectory_age_steps"] == 2
    for extra in rec.line.async_extra:  # 0.7: the teacher groups setup returned
        assert a[extra] == f"setup[{rl_lines.SETUP_VALUES[13].index(extra)}]"


def test_a_wrong_arity_fails(rl_data, tmp_path):
    """The stand-ins really enforce the manifest: one more value from setup breaks the unpacking."""
    m = manifest("v0.4.0")
    m["names"]["setup"]["returns_tuple_of"] = 11
    rec = Recorder(m, _base(m))
    with pytest.raises(ValueError, match="longer|shorter"):
        nrl.run(_our_config(rl_data, tmp_path), [], importer=rec.importer, line=rec.line)


def test_the_04_flow_against_07_fails():
    """Following the 0.4 line in a 0.7 release is caught: a name it uses is gone there."""
    m = manifest("v0.7.0")
    gone = [short for short in rl_lines.LINES[0].names if m["names"][short] is None
            or set(signature_of(m["names"][short]).parameters) != set(
                signature_of(manifest("v0.4.0")["names"][short]).parameters)]
    assert {"load_response_dataset", "grpo_train", "setup"} <= set(gone)


# --- the config against each release's TypedDicts and base config ------------------------


def unknown_keys(m: dict[str, Any], config: dict[str, Any]) -> list[str]:
    """Keys of ``config`` that neither the release's config TypedDicts nor its base config have."""
    typed = m["typed_dicts"]
    base = set(m["base_config"]["keys"])
    extra_data = set(m["names"]["ResponseDataset"]["params"])  # read through get_extra_kwargs (0.4)
    bad = []

    def walk(node: dict[str, Any], prefix: str) -> None:
        for key, value in node.items():
            dotted = f"{prefix}{key}"
            section = prefix.rstrip(".")
            allowed = typed.get(section)
            known = dotted in base or (allowed is not None and key in allowed["required"] + allowed["optional"])
            if section == "data" and not line_of(m).per_split_data:
                known = known or key in extra_data
            if not known:
                bad.append(dotted)
            elif isinstance(value, dict):
                walk(value, dotted + ".")
    walk(config, "")
    return bad


@pytest.mark.parametrize("label", LABELS)
def test_the_master_config_we_build_uses_only_keys_the_release_has(label, rl_data, tmp_path):
    m = manifest(label)
    rec = Recorder(m, _base(m))
    for overrides in ((), ("+grpo.async_grpo.enabled=false",)):
        nrl.run(_our_config(rl_data, tmp_path, *overrides), [], importer=rec.importer, line=rec.line)
        master = rec.calls["MasterConfig"].arguments["config"] if rec.line.master_config_model \
            else rec.calls["setup"].arguments["master_config"]
        ours = {k: v for k, v in master.items() if k in _our_config(rl_data, tmp_path)}
        assert unknown_keys(m, ours) == []


@pytest.mark.parametrize("label", LABELS)
def test_the_resilience_keys_are_the_releases_own(label, rl_data, tmp_path, monkeypatch):
    """A job with [resilience] adds NeMo-RL's own checkpointing keys: each release must have them."""
    monkeypatch.setenv("NEMOTRON_RESILIENCE_DIR", str(tmp_path / "res"))
    monkeypatch.setenv("NEMOTRON_RESILIENCE_EXIT_AFTER", "5400")
    m = manifest(label)
    line = line_of(m)
    master = nrl.master_config(_our_config(rl_data, tmp_path), lambda _path: OmegaConf.create(_base(m)), line=line)
    assert master["checkpointing"]["checkpoint_must_save_by"] == "00:01:30:00"
    assert unknown_keys(m, {"checkpointing": master["checkpointing"]}) == []


@pytest.mark.parametrize("label", LABELS)
def test_the_end_of_training_is_read_from_the_releases_save_state(label):
    """grpo_finished reads the save state grpo_train writes: with only this release's keys, all
    far past the end, it says finished; all at zero, not (a key it reads that the release
    renamed would read as 0 and fail the first)."""
    from nemotron.training.native_resilience import grpo_finished

    keys = [*m_keys(manifest(label))]
    far, zero = dict.fromkeys(keys, 10**6), dict.fromkeys(keys, 0)
    for asynchronous in (False, True):  # the step counts (the dataloader's length unknown)
        assert grpo_finished(far, {"max_num_steps": 5}, None, asynchronous=asynchronous)
        assert not grpo_finished(zero, {"max_num_steps": 5}, None, asynchronous=asynchronous)
    # the epochs: every epoch of 3 batches done, long before max_num_steps
    assert grpo_finished(far, {"max_num_steps": 10**9, "max_num_epochs": 2}, 3, asynchronous=False)


def m_keys(m: dict[str, Any]) -> list[str]:
    """Every key of the release's GRPO save state (required and optional)."""
    state = m["grpo_save_state"]
    return [*state["required"], *state["optional"]]


def test_a_misspelt_key_is_caught():
    m = manifest("v0.4.0")
    cfg = OmegaConf.to_container(load_config_file(RECIPE / "config" / "default.yaml", []), resolve=False)
    cfg["data"]["prompt_key"] = "prompt"
    cfg["grpo"]["num_prompt_per_step"] = 3
    for key in (*LAUNCHER_KEYS, *nrl.OWN_KEYS):
        cfg.pop(key, None)
    assert unknown_keys(m, cfg) == ["grpo.num_prompt_per_step", "data.prompt_key"]


@pytest.mark.parametrize("label", LABELS)
def test_required_keys_are_ours_or_in_the_base_config(label):
    m = manifest(label)
    base = set(m["base_config"]["keys"])
    ours = OmegaConf.to_container(load_config_file(RECIPE / "config" / "default.yaml", []), resolve=False)
    missing = []
    for section, keys in m["typed_dicts"].items():
        if keys is None or section.startswith("data."):  # the dataset entries are built by per_split_data
            continue
        for key in keys["required"]:
            dotted = f"{section}.{key}" if section else key
            node: Any = ours
            for part in dotted.split("."):
                node = node.get(part) if isinstance(node, dict) else None
            if node is None and dotted not in base:
                missing.append(dotted)
    assert missing == []


# --- the data the entry reads ------------------------------------------------------------


def test_data_section_maps_a_data_prep_dir(rl_data):
    out = nrl.data_section({"train_data_path": str(rl_data), "max_input_seq_length": 8})
    assert out["train_data_path"] == str(rl_data / "train.jsonl")
    assert out["val_data_path"] == str(rl_data / "validation.jsonl")
    assert out["dataset_name"] == "ResponseDataset"
    assert nrl.data_section({"train_data_path": "/x/a.jsonl"})["train_data_path"] == "/x/a.jsonl"
    with pytest.raises(ConfigError, match="train_data_path is not set"):
        nrl.data_section({})


def test_check_records_counts_our_output_and_names_a_bad_line(rl_data, tmp_path):
    n = len((rl_data / "train.jsonl").read_text().splitlines())
    assert nrl.check_records(str(rl_data / "train.jsonl")) == n > 0
    bad = tmp_path / "train.jsonl"
    bad.write_text(json.dumps({"prompt": "a", "answer": "1", "task_name": "math"}) + "\n"
                   + json.dumps({"prompt": "b", "answer": None, "task_name": "math"}) + "\n")
    with pytest.raises(ConfigError, match=r"train\.jsonl:2: record has no 'answer'"):
        nrl.check_records(str(bad))
    with pytest.raises(ConfigError, match="not found"):
        nrl.check_records(str(tmp_path / "nope.jsonl"))


def test_actor_env_vars_drop_credentials():
    env = nrl.actor_env_vars({"PATH": "/bin", "WANDB_API_KEY": "x" * 40, "NOTE": "sk-" + "a" * 40})
    assert env == {"PATH": "/bin"}


# --- the extractor itself, on a small package written here ------------------------------


def test_extractor_follows_reexports_and_reads_typed_dicts(tmp_path):
    pkg = tmp_path / "nemo_rl"
    (pkg / "algorithms").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "algorithms" / "__init__.py").write_text("from .impl import train as train\n")
    (pkg / "algorithms" / "impl.py").write_text(
        "from typing import NotRequired, TypedDict\n"
        "class Base(TypedDict):\n    a: int\n    b: NotRequired[int]\n"
        "class MasterConfig(Base):\n    c: str\n"
        "def train(x, y, *, z=1, w) -> tuple[int, int, int]:\n"
        "    def helper():\n        return (1, 2)\n"
        "    return (x, y, z)\n")
    api = _api_script()
    src = api.Source(api.tree_reader(str(tmp_path)))
    desc = api.describe(src, "nemo_rl.algorithms.train")
    assert desc == {"defined_in": "nemo_rl.algorithms.impl", "kind": "function", "params": ["x", "y", "z", "w"],
                    "required": ["x", "y", "w"], "returns_tuple_of": 3}  # the nested helper's return not counted
    assert api.typed_dict_keys(src, "nemo_rl.algorithms.impl", "MasterConfig") == {
        "required": ["a", "c"], "optional": ["b"]}
    assert api.describe(src, "nemo_rl.algorithms.nothing") is None
