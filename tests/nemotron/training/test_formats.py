"""Checkpoint formats: what each stage records, the consumer's check before it starts, and the
nano3 convert stage (Megatron-Bridge's export, per release, through stand-ins from its source)."""

from __future__ import annotations

import inspect
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from nemo_runspec.artifacts.registry import ArtifactRegistry, set_registry
from nemo_runspec.errors import ConfigError
from nemo_runspec.runtime import outcome
from nemotron.training import bridge_lines as bl
from nemotron.training import convert, formats
from nemotron.training.entry import resolve_path_key

from .manifests import MB_LABELS, mb_manifest
from .manifests import signature_of as _signature

ROOT = Path(__file__).resolve().parents[3]
DATA = Path(__file__).parent / "data"
CONVERT = ROOT / "src/nemotron/recipes/nano3/stage1_sft/convert.py"
RL = ROOT / "src/nemotron/recipes/nano3/stage2_rl"


def _megatron(d: Path) -> Path:
    (d / "iter_0000010").mkdir(parents=True)
    (d / "latest_checkpointed_iteration.txt").write_text("10")
    return d


def _hf(d: Path) -> Path:
    d.mkdir(parents=True)
    (d / "config.json").write_text("{}")
    (d / "model.safetensors").write_bytes(b"")
    return d


def _fallback(d: Path) -> Path:
    d.mkdir(parents=True)
    (d / "step_00000010.pt").write_bytes(b"")
    return d


def test_detect_each_layout(tmp_path):
    assert formats.detect(_megatron(tmp_path / "m")) == "megatron-dist"
    assert formats.detect(_hf(tmp_path / "h")) == "hf"
    assert formats.detect(_fallback(tmp_path / "f")) == "fallback-pt"
    (tmp_path / "r" / "step_50" / "policy").mkdir(parents=True)
    assert formats.detect(tmp_path / "r") == "nemo-rl"
    assert formats.detect(tmp_path / "nothing") is None


def test_what_each_stage_writes_and_reads():
    assert [formats.produced(k, "native") for k in ("pretrain", "sft", "convert", "rl")] == [
        "megatron-dist", "megatron-dist", "hf", "nemo-rl"]
    assert formats.produced("sft", "torch") == "fallback-pt"
    assert [formats.needed(k, "native") for k in ("pretrain", "sft", "convert", "rl", "eval")] == [
        None, "megatron-dist", "megatron-dist", "hf", "hf"]
    assert formats.needed("rl", "torch") == "fallback-pt"


@pytest.fixture
def registry(tmp_path):
    reg = ArtifactRegistry(tmp_path / "registry")
    set_registry(reg)
    yield reg
    set_registry(None)


def _rl_cfg(model_ref: str) -> dict[str, Any]:
    return {"run": {"model": model_ref}, "policy": {"model_name": "${art:model,path}"}}


def test_rl_refuses_a_megatron_checkpoint_in_one_line_naming_the_fix(registry, tmp_path):
    registry.publish("nano3-sft-model", _megatron(tmp_path / "sft"), metadata={"format": "megatron-dist"})
    with pytest.raises(ConfigError) as exc:
        formats.check_model_input("rl", _rl_cfg("nano3-sft-model:latest"), "native", resolve=resolve_path_key)
    msg = str(exc.value)
    assert msg.startswith("nano3/rl: the model nano3-sft-model:v1 (") and "is megatron-dist; this stage's " \
        "backend loads a Hugging Face model (hf)" in msg and "\n" not in msg
    assert exc.value.key == "policy.model_name" and "nemotron nano3 convert" in msg


def test_the_recorded_format_wins_and_an_old_artifact_is_read_from_its_layout(registry, tmp_path):
    registry.publish("nano3-sft-model-hf", _hf(tmp_path / "hf"), metadata={"format": "hf"})
    assert formats.check_model_input("rl", _rl_cfg("nano3-sft-model-hf:latest"), "native",
                                     resolve=resolve_path_key) == "hf"
    registry.publish("old", _megatron(tmp_path / "old"))  # published before formats were recorded
    with pytest.raises(ConfigError, match="is megatron-dist"):
        formats.check_model_input("rl", _rl_cfg("old:latest"), "native", resolve=resolve_path_key)
    registry.publish("liar", _hf(tmp_path / "liar"), metadata={"format": "fallback-pt"})
    with pytest.raises(ConfigError, match="is fallback-pt"):  # the record, not the guess
        formats.check_model_input("rl", _rl_cfg("liar:latest"), "native", resolve=resolve_path_key)


def test_eval_of_a_nemo_rl_checkpoint_names_nemo_rls_converter(registry, tmp_path):
    rl = tmp_path / "rl"
    (rl / "step_50" / "policy" / "weights").mkdir(parents=True)
    registry.publish("nano3-rl-model", rl, metadata={"format": "nemo-rl"})
    cfg = {"run": {"model": "nano3-rl-model:latest"}, "deployment": {"checkpoint_path": "${art:model,path}"}}
    with pytest.raises(ConfigError, match="is nemo-rl; this stage's backend loads a Hugging Face model") as exc:
        formats.check_model_input("eval", cfg, "native", resolve=resolve_path_key)
    assert "convert_dcp_to_hf.py" in str(exc.value) and exc.value.key == "deployment.checkpoint_path"


def test_no_model_or_an_unresolvable_one_is_left_to_the_stage(registry):
    assert formats.check_model_input("rl", {"policy": {"model_name": None}}, "native", resolve=resolve_path_key) is None
    assert formats.check_model_input("rl", _rl_cfg("absent:latest"), "native", resolve=resolve_path_key) is None
    assert formats.check_model_input("pretrain", {}, "native", resolve=resolve_path_key) is None
    cfg = {"fallback": {"init_from_pretrained": False}, "checkpoint": {"pretrained_checkpoint": "/x"}}
    assert formats.check_model_input("sft", cfg, "torch", resolve=resolve_path_key) is None


# --- the convert stage -------------------------------------------------------------------

LABELS = MB_LABELS


@pytest.mark.parametrize("label", LABELS)
def test_convert_calls_the_releases_own_export(label, tmp_path, monkeypatch):
    """AutoBridge with the release's method signatures (from its source): the factory its own
    convert_checkpoints.py export uses, then export_ckpt, each bound against the manifest."""
    m = mb_manifest(label)
    line = bl.line_for(m["source"]["version"])
    calls: dict[str, inspect.BoundArguments] = {}

    def method(name: str) -> Any:
        desc = m["names"][f"{bl.AUTO_BRIDGE}.{name}"]
        assert desc is not None, f"megatron-bridge {m['source']['version']} has no AutoBridge.{name}"
        sig = _signature(desc)

        def call(*args: Any, **kwargs: Any) -> Any:
            calls[name] = sig.bind(*args, **kwargs)
            return bridge
        return call
    bridge = type("AutoBridge", (), {n: staticmethod(method(n)) for n in ("from_hf_pretrained", "from_auto_config",
                                                                         "export_ckpt")
                                     if m["names"][f"{bl.AUTO_BRIDGE}.{n}"] is not None})
    monkeypatch.setenv("NEMOTRON_JOB_DIR", str(tmp_path))
    cfg = yaml.safe_load((CONVERT.parent / "config/convert/default.yaml").read_text())
    cfg["convert"]["megatron_path"] = "/ckpt/sft"
    cfg["checkpoint"]["save"] = "hf"
    assert convert.run(cfg, importer=lambda dotted: bridge, line=line) == 0
    factory = calls[line.export_factory].arguments
    assert "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16" in factory.values()
    assert factory.get("kwargs", factory).get("trust_remote_code") is True
    export = calls["export_ckpt"].arguments
    assert (export["megatron_path"], export["hf_path"]) == ("/ckpt/sft", str(tmp_path / "hf"))
    assert line.export_factory == ("from_auto_config" if m["names"][f"{bl.AUTO_BRIDGE}.from_auto_config"]
                                   else "from_hf_pretrained")


#: where each release keeps its own Megatron -> Hugging Face export (0.6 moved it)
EXPORT_SCRIPTS = ("examples/conversion/convert_checkpoints.py", "scripts/conversion/cpu_backend.py")


@pytest.mark.allowed_skip("needs a Megatron-Bridge git dir (MEGATRON_BRIDGE_SRC), which a clean clone does not have")
@pytest.mark.parametrize("label", LABELS)
def test_the_export_factory_is_the_one_the_releases_own_export_calls(label):
    """export_factory per line is what the release's own export script calls, read at its tag."""
    src = os.environ.get("MEGATRON_BRIDGE_SRC")
    if not src:
        pytest.skip("set MEGATRON_BRIDGE_SRC to a Megatron-Bridge git dir to read its export scripts")
    m = mb_manifest(label)
    texts = [subprocess.run(["git", "--git-dir", src, "show", f"{m['source']['commit']}:{path}"],
                            capture_output=True, text=True).stdout for path in EXPORT_SCRIPTS]
    calls = {factory for text in texts for factory in re.findall(r"\bbridge = AutoBridge\.(\w+)\(", text)}
    assert calls == {bl.line_for(m["source"]["version"]).export_factory}, calls


def test_convert_with_matching_formats_has_nothing_to_do(tmp_path):
    r = subprocess.run([sys.executable, str(CONVERT), "--config", str(CONVERT.parent / "config/convert/tiny.yaml")],
                       cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    said = ("nano3/convert: nothing to convert: formats already match (fallback-pt -> fallback-pt): the next "
            "stage reads the model as it is")
    lines = r.stdout.strip().splitlines()
    assert lines[0] == said
    # the log's last line says how the job ended (docs/execution.md, "How a job ends")
    assert len(lines) == 2 and lines[1].startswith("nemotron-outcome: ")
    ended = outcome.parse_line(lines[1])
    assert (ended.ok, ended.exit_code, ended.message, ended.recipe) == (True, 0, said, "nano3/convert")


def test_convert_with_a_config_that_cannot_load_ends_with_its_outcome_line(tmp_path):
    r = subprocess.run([sys.executable, str(CONVERT), "--config", str(tmp_path / "absent.yaml")],
                       cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert r.returncode == 2, r.stdout + r.stderr
    assert "Traceback" not in r.stderr
    [error] = r.stderr.strip().splitlines()
    assert error.startswith("error: ") and "absent.yaml" in error
    ended = outcome.parse_line(r.stdout.strip().splitlines()[-1])
    assert (ended.ok, ended.exit_code, ended.message) == (False, 2, error)


def test_convert_refuses_a_fallback_checkpoint_before_importing_anything(tmp_path):
    """A stand-in megatron-bridge 0.3.0rc0 whose import raises; the input is a fallback-pt model."""
    site = tmp_path / "site"
    for pkg in ("megatron/bridge", "transformer_engine"):
        (site / pkg).mkdir(parents=True)
        (site / pkg / "__init__.py").write_text("raise RuntimeError('imported')\n")
    (site / "megatron/bridge/package_info.py").write_text("MAJOR = 0\nMINOR = 3\nPATCH = 0\nPRE_RELEASE = 'rc0'\n")
    registry = tmp_path / "registry"
    ArtifactRegistry(registry).publish("nano3-sft-model", _fallback(tmp_path / "sft"),
                                       metadata={"format": "fallback-pt"})
    cfg = yaml.safe_load((CONVERT.parent / "config/convert/default.yaml").read_text())
    cfg["run"]["env"] = {"container_image": "nvcr.io/nvidia/nemo:25.11.nemotron_3_nano"}
    (tmp_path / "train.yaml").write_text(yaml.safe_dump(cfg))
    env = {k: v for k, v in os.environ.items() if not k.startswith("NEMOTRON_")}
    env.update(PYTHONPATH=str(site), NEMOTRON_ARTIFACTS_ROOT=str(registry), NEMOTRON_HOME=str(tmp_path / "h"))
    r = subprocess.run([sys.executable, str(CONVERT), "--config", str(tmp_path / "train.yaml")], cwd=tmp_path,
                       env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 2, r.stdout + r.stderr
    assert r.stderr.strip().splitlines() == [r.stderr.strip()]
    assert "error: nano3/convert: the model nano3-sft-model:v1 (" in r.stderr
    assert "is fallback-pt; this stage's backend loads a Megatron distributed checkpoint (megatron-dist)" in r.stderr


def test_the_rl_stage_starts_from_the_hf_export_and_the_tiny_chain_from_sft():
    assert yaml.safe_load((RL / "config/default.yaml").read_text())["run"]["model"] == "nano3-sft-model-hf:latest"
    assert yaml.safe_load((RL / "config/tiny.yaml").read_text())["run"]["model"] == "nano3-sft-model-tiny:latest"
