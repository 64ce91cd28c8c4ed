"""Our NeMo-RL GRPO entry checked against NeMo-RL v0.4.0's own source.

NeMo-RL has no usable PyPI release, so it cannot be installed here. Its API as
our entry uses it (signatures, the ten values ``setup`` returns, the config
TypedDicts, the base GRPO config's keys) is recorded from the pinned tag's
source by ``scripts/nemo_rl_api.py`` into ``data/nemo_rl-v0.4.0.json``. These
tests drive ``nemotron.training.nemo_rl.run`` with stand-ins whose signatures
come from that manifest, so a renamed parameter, a changed arity or a config
key NeMo-RL does not have fails here. With ``NEMO_RL_SRC`` set to a NeMo-RL git
dir, the manifest itself is regenerated and compared.
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
from nemotron.training.entry import LAUNCHER_KEYS

ROOT = Path(__file__).resolve().parents[3]
RECIPE = ROOT / "src/nemotron/recipes/nano3/stage2_rl"
MANIFEST = json.loads((Path(__file__).parent / "data" / "nemo_rl-v0.4.0.json").read_text())


def _api_script() -> Any:
    spec = importlib.util.spec_from_file_location("nemo_rl_api", ROOT / "scripts" / "nemo_rl_api.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# --- the pin -----------------------------------------------------------------------------


def test_manifest_is_the_pinned_release_and_the_image_matches():
    assert MANIFEST["source"] == {"repo": "NVIDIA-NeMo/RL", "ref": "v0.4.0", "commit": nrl.PINNED_COMMIT}
    assert nrl.PINNED.endswith(MANIFEST["source"]["ref"])
    assert parse(RECIPE / "train.py").image.endswith(":" + MANIFEST["source"]["ref"])
    assert nrl.BASE_CONFIG.endswith(MANIFEST["base_config"]["path"])  # /opt/nemo-rl is the image's WORKDIR


def test_every_name_we_use_exists_at_the_pin():
    assert set(MANIFEST["names"]) == set(nrl.NAMES), "regenerate the manifest (scripts/nemo_rl_api.py)"
    missing = [short for short, desc in MANIFEST["names"].items() if desc is None]
    assert missing == []


@pytest.mark.allowed_skip("needs a NeMo-RL git checkout (NEMO_RL_SRC), which a clean clone does not have")
def test_manifest_is_what_the_pinned_source_says():
    src = os.environ.get("NEMO_RL_SRC")
    if not src:
        pytest.skip("set NEMO_RL_SRC to a NeMo-RL git dir to re-read the pinned source")
    api = _api_script()
    fresh = api.manifest(api.git_reader(src, "v0.4.0"), nrl.NAMES, ref="v0.4.0", commit=nrl.PINNED_COMMIT)
    assert json.loads(json.dumps(fresh)) == MANIFEST


# --- stand-ins shaped like NeMo-RL (from the manifest) -----------------------------------


class Recorder:
    """Stand-ins for NeMo-RL's objects with the pinned signatures; every call is bound
    against that signature (wrong names or counts raise TypeError) and recorded."""

    def __init__(self, base: dict[str, Any]) -> None:
        self.calls: dict[str, inspect.BoundArguments] = {}
        self.base = base

    def signature(self, short: str) -> inspect.Signature:
        desc = MANIFEST["names"][short]
        kind = inspect.Parameter.POSITIONAL_OR_KEYWORD
        return inspect.Signature([
            inspect.Parameter(p, kind, **({} if p in desc["required"] else {"default": None}))
            for p in desc["params"]])

    def function(self, short: str) -> Any:
        sig = self.signature(short)

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
            return _ResponseDatasetLike(a["data_config"])
        if short == "setup":
            return tuple(f"setup[{i}]" for i in range(MANIFEST["names"]["setup"]["returns_tuple_of"]))
        if short == "AllTaskProcessedDataset":
            return ("processed", a["dataset"])
        return f"{short}()"

    def remote_class(self, short: str) -> Any:
        assert "ray.remote" in MANIFEST["names"][short]["decorators"]  # so .options().remote() exists
        recorder, sig = self, self.signature(short)

        class Options:
            def __init__(self, runtime_env: dict[str, Any]) -> None:
                recorder.calls[short + ".options"] = inspect.signature(Options).bind(runtime_env)

            def remote(self, *args: Any, **kwargs: Any) -> str:
                recorder.calls[short] = sig.bind(*args, **kwargs)
                return "MATH_ENV_ACTOR"

        return type(short, (), {"options": staticmethod(lambda **kw: Options(**kw))})

    def importer(self, dotted: str) -> Any:
        short = {v: k for k, v in nrl.NAMES.items()}[dotted]
        if short == "MathEnvironment":
            return self.remote_class(short)
        return self.function(short)


class _ResponseDatasetLike:
    """What ResponseDataset exposes to the entry: ``formatted_ds`` train/validation,
    read with the real ``datasets`` library from the paths and keys we pass."""

    def __init__(self, data: dict[str, Any]) -> None:
        from datasets import load_dataset

        params = MANIFEST["names"]["ResponseDataset"]["params"]
        assert {k for k in ("train_data_path", "val_data_path", "input_key", "output_key") if k in data} <= set(params)

        def load(path: str | None) -> Any:
            if not path:
                return None
            ds = load_dataset("json", data_files=path, cache_dir=str(Path(path).parent / ".hf-cache"))["train"]
            return ds.map(lambda ex: {"messages": [{"role": "user", "content": ex[data["input_key"]]},
                                                   {"role": "assistant", "content": ex[data["output_key"]]}]})
        self.formatted_ds = {"train": load(data["train_data_path"]), "validation": load(data.get("val_data_path"))}


def _base_from_manifest() -> dict[str, Any]:
    """The pinned base GRPO config as NeMo-RL's load_config returns it (it has no ``defaults``)."""
    assert MANIFEST["base_config"]["has_defaults"] is False
    return json.loads(json.dumps(MANIFEST["base_config"]["values"]))


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


# --- the run, call by call ---------------------------------------------------------------


def test_run_makes_the_grpo_calls_with_the_pinned_signatures(rl_data, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("HF_TOKEN", "hf_" + "a" * 34)
    monkeypatch.setenv("NEMOTRON_TEST_PLAIN", "visible")
    rec = Recorder(_base_from_manifest())
    assert nrl.run(_our_config(rl_data, tmp_path), [], importer=rec.importer) == 0
    c = rec.calls

    assert c["load_config"].arguments["config_path"] == nrl.BASE_CONFIG
    master = c["setup"].arguments["master_config"]
    # ours on top of the base, the rest of the base kept
    assert master["grpo"]["num_prompts_per_step"] == 64
    assert master["policy"]["dtensor_cfg"] == _base_from_manifest()["policy"]["dtensor_cfg"]
    assert "base_config" not in master
    assert master["logger"]["log_dir"].endswith("/exp_001")
    assert master["policy"]["generation"]["_pad_token_id"] == 0  # configure_generation_config's result kept
    assert c["get_tokenizer"].arguments["tokenizer_config"]["name"] == str(tmp_path / "model")
    # the data-prep dir became ResponseDataset's files and keys
    assert master["data"]["train_data_path"] == str(rl_data / "train.jsonl")
    assert master["data"]["val_data_path"] == str(rl_data / "validation.jsonl")
    assert (master["data"]["input_key"], master["data"]["output_key"]) == ("prompt", "answer")
    assert c["load_response_dataset"].arguments["seed"] == 42

    # datasets: our records through the real datasets library, as ResponseDataset maps them
    train = c["setup"].arguments["dataset"][1]
    n_train = len((rl_data / "train.jsonl").read_text().splitlines())
    assert len(train) == n_train and set(train[0]["messages"][0]) == {"role", "content"}
    assert train[0]["task_name"] == "math" and train[0]["messages"][1]["content"] == train[0]["answer"]
    assert c["AllTaskProcessedDataset"].arguments["max_seq_length"] == 4096
    spec, proc = c["AllTaskProcessedDataset"].arguments["task_data_processors"]["math"]
    assert proc is not None and c["TaskDataSpec"].arguments["task_name"] == "math"

    # the environment actor: NeMo-RL's python env, no credential in its runtime_env
    assert c["MathEnvironment"].arguments["cfg"]["num_workers"] == 8
    runtime_env = c["MathEnvironment.options"].arguments["runtime_env"]
    assert runtime_env["py_executable"] == "get_actor_python_env()"
    assert c["get_actor_python_env"].arguments["actor_class_fqn"] == nrl.MATH_ENV
    assert runtime_env["env_vars"]["NEMOTRON_TEST_PLAIN"] == "visible" and "HF_TOKEN" not in runtime_env["env_vars"]

    # grpo_train gets setup's values in its own order, with the tokenizer and both env maps
    g = c["grpo_train"].arguments
    assert (g["policy"], g["policy_generation"], g["dataloader"], g["val_dataloader"]) == (
        "setup[0]", "setup[1]", "setup[3]", "setup[4]")
    assert (g["loss_fn"], g["logger"], g["checkpointer"], g["grpo_save_state"], g["master_config"]) == (
        "setup[5]", "setup[6]", "setup[7]", "setup[8]", "setup[9]")
    assert g["tokenizer"] == "TOKENIZER" and g["task_to_env"]["math"] == "MATH_ENV_ACTOR"
    assert g["val_task_to_env"]["anything"] == "MATH_ENV_ACTOR"  # every task goes to the math env
    assert "async_grpo_train" not in c and "init_ray" in c
    assert "NeMo-RL GRPO (nemo-rl v0.4.0)" in capsys.readouterr().out


def test_async_grpo_goes_to_async_grpo_train(rl_data, tmp_path):
    rec = Recorder(_base_from_manifest())
    cfg = _our_config(rl_data, tmp_path, "+grpo.async_grpo.enabled=true",
                      "+grpo.async_grpo.max_trajectory_age_steps=2")
    nrl.run(cfg, [], importer=rec.importer)
    assert "grpo_train" not in rec.calls
    assert rec.calls["async_grpo_train"].arguments["max_trajectory_age_steps"] == 2


def test_a_wrong_arity_fails(rl_data, tmp_path, monkeypatch):
    """The stand-ins really enforce the manifest: one more value from setup breaks the unpacking."""
    rec = Recorder(_base_from_manifest())
    changed = json.loads(json.dumps(MANIFEST))
    changed["names"]["setup"]["returns_tuple_of"] = 11
    monkeypatch.setitem(globals(), "MANIFEST", changed)
    with pytest.raises(ValueError, match="too many values"):
        nrl.run(_our_config(rl_data, tmp_path), [], importer=rec.importer)


# --- the config against NeMo-RL's TypedDicts and base config -----------------------------


def unknown_keys(config: dict[str, Any]) -> list[str]:
    """Keys of ``config`` that neither NeMo-RL's config TypedDicts nor its base GRPO config have."""
    typed = MANIFEST["typed_dicts"]
    base = set(MANIFEST["base_config"]["keys"])
    extra_data = set(MANIFEST["names"]["ResponseDataset"]["params"])  # read through get_extra_kwargs
    bad = []

    def walk(node: dict[str, Any], prefix: str) -> None:
        for key, value in node.items():
            dotted = f"{prefix}{key}"
            section = prefix.rstrip(".")
            allowed = typed.get(section)
            known = dotted in base or (allowed is not None and key in allowed["required"] + allowed["optional"])
            if section == "data":
                known = known or key in extra_data
            if not known:
                bad.append(dotted)
            elif isinstance(value, dict):
                walk(value, dotted + ".")
    walk(config, "")
    return bad


def _raw_config(name: str) -> dict[str, Any]:
    cfg = OmegaConf.to_container(load_config_file(RECIPE / "config" / f"{name}.yaml", []), resolve=False)
    for key in (*LAUNCHER_KEYS, *nrl.OWN_KEYS):
        cfg.pop(key, None)
    return cfg


@pytest.mark.parametrize("name", ["default", "tiny"])
def test_our_rl_configs_use_only_keys_nemo_rl_has(name):
    assert unknown_keys(_raw_config(name)) == []


def test_a_misspelt_key_is_caught():
    cfg = _raw_config("default")
    cfg["data"]["prompt_key"] = "prompt"
    cfg["grpo"]["num_prompt_per_step"] = 3
    assert unknown_keys(cfg) == ["grpo.num_prompt_per_step", "data.prompt_key"]


def test_required_keys_are_ours_or_in_the_base_config():
    base = set(MANIFEST["base_config"]["keys"])
    ours = _raw_config("default")
    missing = []
    for section, keys in MANIFEST["typed_dicts"].items():
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
    (pkg / "algorithms" / "__init__.py").write_text("from nemo_rl.algorithms.impl import train as train\n")
    (pkg / "algorithms" / "impl.py").write_text(
        "from typing import NotRequired, TypedDict\n"
        "class Base(TypedDict):\n    a: int\n    b: NotRequired[int]\n"
        "class MasterConfig(Base):\n    c: str\n"
        "def train(x, y, *, z=1, w):\n    return (x, y, z)\n")
    api = _api_script()
    src = api.Source(api.tree_reader(str(tmp_path)))
    desc = api.describe(src, "nemo_rl.algorithms.train")
    assert desc == {"defined_in": "nemo_rl.algorithms.impl", "kind": "function", "params": ["x", "y", "z", "w"],
                    "required": ["x", "y", "w"], "returns_tuple_of": 3}
    assert api.typed_dict_keys(src, "nemo_rl.algorithms.impl", "MasterConfig") == {
        "required": ["a", "c"], "optional": ["b"]}
    assert api.describe(src, "nemo_rl.algorithms.nothing") is None
