"""`nemotron nano3 model import pretrain|sft|rl`: layout checks and registration, on real checkpoint dirs
(Megatron layout, Hugging Face files written by safetensors/torch, the CPU fallback trainer's step_*.pt)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
import torch  # noqa: E402 - in the test extra: never skipped
from typer.testing import CliRunner

from nemo_runspec.artifacts.registry import get_registry, set_registry
from nemo_runspec.cmdline.context import GlobalContext
from nemotron.cli.commands.nano3.model.import_ import app
from tests.nemotron_cli import NEMOTRON

runner = CliRunner()


@pytest.fixture(autouse=True)
def registry_root(tmp_path, monkeypatch) -> Path:
    root = tmp_path / "registry"
    monkeypatch.setenv("NEMOTRON_ARTIFACTS_ROOT", str(root))
    monkeypatch.delenv("NEMOTRON_DEBUG", raising=False)
    monkeypatch.delenv("NEMOTRON_ENV_FILE", raising=False)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("COLUMNS", "250")
    set_registry(None)
    yield root
    set_registry(None)


def invoke(*args, dry_run: bool = False):
    return runner.invoke(app, [str(a) for a in args], obj=GlobalContext(dry_run=dry_run))


def registered(root: Path) -> list[Path]:
    return sorted(root.rglob("v*.json")) if root.exists() else []


def megatron(d: Path, iters=(10, 20), tracker: str | None = "20") -> Path:
    for i in iters:
        it = d / f"iter_{i:07d}"
        it.mkdir(parents=True)
        torch.save({"iteration": i}, it / "common.pt")
        (it / ".metadata").write_bytes(b"\x80\x04N.")
    if tracker is not None:
        (d / "latest_checkpointed_iteration.txt").write_text(tracker + "\n")
    return d


def hf(d: Path, *, sharded: bool = False, bin_format: bool = False) -> Path:
    from safetensors.torch import save_file

    d.mkdir(parents=True)
    (d / "config.json").write_text(json.dumps({"model_type": "nemotron_h", "architectures": ["NemotronHForCausalLM"]}))
    (d / "tokenizer.json").write_text("{}")
    if bin_format:
        torch.save({"w": torch.ones(2, 2)}, d / "pytorch_model.bin")
    elif sharded:
        save_file({"a": torch.ones(2)}, str(d / "model-00001-of-00002.safetensors"))
        save_file({"b": torch.ones(3)}, str(d / "model-00002-of-00002.safetensors"))
        (d / "model.safetensors.index.json").write_text(json.dumps(
            {"weight_map": {"a": "model-00001-of-00002.safetensors", "b": "model-00002-of-00002.safetensors"}}))
    else:
        save_file({"w": torch.zeros(4, 4)}, str(d / "model.safetensors"))
    return d


def fallback(d: Path, task: str = "pretrain", steps=(10, 20)) -> Path:
    """What the fallback trainer writes (nemotron.training.loop's save)."""
    from nemotron.training.checkpoint import save_checkpoint
    from nemotron.training.tiny_gpt import GPTConfig, TinyGPT

    cfg = GPTConfig(vocab_size=50, seq_length=16, n_layer=1, n_head=2, d_model=16)
    model = TinyGPT(cfg)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, betas=(0.9, 0.95))
    for p in model.parameters():
        p.grad = torch.ones_like(p)
    opt.step()
    for step in steps:
        save_checkpoint(d, {"step": step, "task": task, "tokens": step * 8, "model": model.state_dict(),
                            "optimizer": opt.state_dict(), "model_config": cfg.to_dict()}, step, keep=5)
    return d


@pytest.mark.parametrize("kind,default", [("pretrain", "nano3-pretrain-model"), ("sft", "nano3-sft-model"),
                                          ("rl", "nano3-rl-model")])
def test_megatron_checkpoint_registers_under_the_stage_name(kind, default, tmp_path):
    d = megatron(tmp_path / "ckpt")
    res = invoke(kind, d)
    assert res.exit_code == 0, res.output
    art = get_registry().resolve(f"{default}:latest")
    assert art.version == 1 and Path(art.path) == d.resolve()
    assert art.metadata["format"] == "megatron-dist" and art.metadata["iteration"] == 20
    assert art.metadata["iterations"] == [10, 20] and art.metadata["kind"] == f"{kind}-model"
    assert art.metadata["imported_from"] == str(d.resolve())
    assert f"artifact: {default}:v1" in res.stdout and "checkpoint: Megatron checkpoint, iteration 20" in res.stdout


def test_megatron_without_tracker_gets_one_written_with_a_note(tmp_path):
    d = megatron(tmp_path / "ckpt", iters=(5, 30, 7), tracker=None)
    res = invoke("pretrain", d)
    assert res.exit_code == 0, res.output
    assert "note: wrote" in res.stdout
    assert (d / "latest_checkpointed_iteration.txt").read_text() == "30\n"
    assert get_registry().resolve("nano3-pretrain-model:latest").metadata["tracker_generated"] is True


def test_failed_publish_leaves_path_as_it_was(tmp_path, registry_root):
    d = megatron(tmp_path / "ckpt", tracker=None)
    res = invoke("pretrain", d, "--alias", "3")  # a version number is no alias: refused
    assert res.exit_code == 2 and "invalid alias '3'" in res.stderr
    assert not (d / "latest_checkpointed_iteration.txt").exists()
    assert registered(registry_root) == []


@pytest.mark.parametrize("variant", ["single", "sharded", "bin"])
def test_hugging_face_model(variant, tmp_path):
    d = hf(tmp_path / "hf", sharded=variant == "sharded", bin_format=variant == "bin")
    res = invoke("sft", d, "--name", "my-sft", "--alias", "candidate")
    assert res.exit_code == 0, res.output
    reg = get_registry()
    art = reg.resolve("my-sft:candidate")
    assert reg.resolve("my-sft:latest").version == art.version == 1
    assert art.metadata["format"] == "hf" and art.metadata["model_type"] == "nemotron_h"
    assert art.metadata["weight_files"] == (2 if variant == "sharded" else 1) and art.metadata["tokenizer"]
    assert "Hugging Face nemotron_h" in res.stdout


def test_a_hugging_face_sft_model_is_registered_under_the_name_rl_starts_from(tmp_path):
    import yaml

    from nemotron.recipes import RECIPES_DIR

    rl = yaml.safe_load((RECIPES_DIR / "nano3/stage2_rl/config/default.yaml").read_text())
    res = invoke("sft", hf(tmp_path / "hf"))
    assert res.exit_code == 0, res.output
    art = get_registry().resolve(rl["run"]["model"])
    assert art.name == "nano3-sft-model-hf" and art.metadata["format"] == "hf"


def test_format_that_will_not_suit_the_next_stage_gets_a_note(tmp_path):
    res = invoke("sft", megatron(tmp_path / "meg"))
    assert res.exit_code == 0 and "note: nano3 rl's NeMo-RL backend loads a Hugging Face model" in res.stdout
    assert "`nemotron nano3 convert` exports this checkpoint to nano3-sft-model-hf" in res.stdout
    res = invoke("pretrain", hf(tmp_path / "hf"))
    assert res.exit_code == 0 and "note: nano3 sft's Megatron-Bridge backend" in res.stdout
    res = invoke("rl", hf(tmp_path / "hf2"))
    assert res.exit_code == 0 and "note:" not in res.stdout


def test_fallback_checkpoint_is_the_tiny_model_and_the_tiny_sft_can_start_from_it(tmp_path):
    from nemotron.training.loop import init_from_checkpoint
    from nemotron.training.tiny_gpt import GPTConfig, TinyGPT

    d = fallback(tmp_path / "checkpoints")
    res = invoke("pretrain", d)
    assert res.exit_code == 0, res.output
    art = get_registry().resolve("nano3-pretrain-model-tiny:latest")
    assert art.metadata["format"] == "fallback-pt" and art.metadata["step"] == 20 and art.metadata["task"] == "pretrain"
    assert art.metadata["model_config"]["d_model"] == 16
    assert "fallback checkpoint, step 20 (pretrain)" in res.stdout
    # what the SFT fallback does with checkpoint.pretrained_checkpoint = ${art:model,path}
    model = TinyGPT(GPTConfig(vocab_size=50, seq_length=32, n_layer=1, n_head=2, d_model=16))
    src, step = init_from_checkpoint(model, art.path)
    assert step == 20 and src.name == "step_00000020.pt"


def test_tiny_sft_dry_run_resolves_the_imported_model(tmp_path, registry_root):
    d = fallback(tmp_path / "checkpoints")
    assert invoke("pretrain", d).exit_code == 0
    env = {k: v for k, v in os.environ.items() if not k.startswith("NEMOTRON_")}
    env.update(NEMOTRON_ARTIFACTS_ROOT=str(registry_root), NEMOTRON_HOME=str(tmp_path / "home"), COLUMNS="250")
    proc = subprocess.run([str(NEMOTRON), "nano3", "sft", "-c", "tiny", "--dry-run"], capture_output=True,
                          text=True, env=env, cwd=tmp_path, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "nano3-pretrain-model-tiny:latest" in proc.stdout and f"v1  {d.resolve()}" in proc.stdout


def test_fallback_checkpoint_of_another_stage_is_refused(tmp_path, registry_root):
    d = fallback(tmp_path / "checkpoints", task="pretrain")
    res = invoke("sft", d)
    assert res.exit_code == 2
    assert "step_00000020.pt: was written by the pretrain stage, not sft" in res.stderr
    assert "nemotron nano3 model import pretrain" in res.stderr
    assert registered(registry_root) == []
    assert invoke("rl", fallback(tmp_path / "rl", task="rl-smoke")).exit_code == 0


def test_copy_puts_the_checkpoint_in_the_registry(tmp_path, registry_root):
    d = hf(tmp_path / "hf")
    res = invoke("rl", d, "--copy")
    assert res.exit_code == 0, res.output
    art = get_registry().resolve("nano3-rl-model:v1")
    assert Path(art.path).is_relative_to(registry_root)
    assert (Path(art.path) / "model.safetensors").read_bytes() == (d / "model.safetensors").read_bytes()


def test_dry_run_checks_and_writes_nothing(tmp_path, registry_root):
    d = megatron(tmp_path / "ckpt", tracker=None)
    assert invoke("pretrain", megatron(tmp_path / "first")).exit_code == 0
    before = registered(registry_root)
    res = invoke("pretrain", d, "--alias", "good", "--copy", dry_run=True)
    assert res.exit_code == 0, res.output
    assert "note: would write" in res.stdout
    assert ("would register it as nano3-pretrain-model:v2 (aliases: latest, good) as a copy; nothing was written"
            in res.stdout)
    assert registered(registry_root) == before and not (d / "latest_checkpointed_iteration.txt").exists()
    # a dry run still checks the layout and the names
    bad = invoke("pretrain", tmp_path, dry_run=True)
    assert bad.exit_code == 2 and "not a model checkpoint" in bad.stderr
    bad = invoke("pretrain", d, "--name", "no way", dry_run=True)
    assert bad.exit_code == 2 and "invalid artifact name" in bad.stderr


def _lfs(d: Path) -> None:
    (d / "model.safetensors").write_text("version https://git-lfs.github.com/spec/v1\noid sha256:00\nsize 9\n")


def _truncated(d: Path) -> None:
    data = (d / "model.safetensors").read_bytes()
    (d / "model.safetensors").write_bytes(data[:12])


@pytest.mark.parametrize(
    "make,needle",
    [
        (lambda t: t.mkdir() or t, "not a model checkpoint (expected a Megatron checkpoint (latest_checkpointed_"
                                   "iteration.txt or iter_*/ dirs), a Hugging Face model (config.json + *.safetensors "
                                   "or pytorch_model*.bin), or a fallback checkpoint (step_*.pt))"),
        (lambda t: megatron(t, tracker="40"), "latest_checkpointed_iteration.txt: names iter_0000040/, which is missing"),
        (lambda t: megatron(t, tracker="best"), "latest_checkpointed_iteration.txt:1: holds 'best'"),
        (lambda t: [megatron(t, iters=(10,), tracker="10"), *(p.unlink() for p in (t / "iter_0000010").iterdir())] and t,
         "iter_0000010/ is empty"),
        (lambda t: megatron(t) / "iter_0000020", "pass its parent"),
        (lambda t: [hf(t), (t / "config.json").write_text('{"model_type": ')] and t, "config.json:1: invalid JSON"),
        (lambda t: [hf(t), (t / "model.safetensors").unlink()] and t, "config.json but no weights"),
        (lambda t: [hf(t), _lfs(t)] and t, "model.safetensors: is a Git LFS pointer"),
        (lambda t: [hf(t), _truncated(t)] and t, "model.safetensors: not a safetensors file"),
        (lambda t: [hf(t, sharded=True), (t / "model-00002-of-00002.safetensors").unlink()] and t,
         "model.safetensors.index.json: names 1 missing shard(s): model-00002-of-00002.safetensors"),
        (lambda t: [fallback(t), (t / "step_00000020.pt").write_bytes(b"garbage")] and t,
         "step_00000020.pt: cannot be read as a torch checkpoint"),
        (lambda t: [megatron(t / "inner").parent] and t, "did you mean"),
    ],
)
def test_bad_layouts_are_one_line_errors(make, needle, tmp_path, registry_root):
    target = make(tmp_path / "ckpt")
    res = invoke("pretrain", target)
    assert res.exit_code == 2, res.output
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and needle in lines[0], lines
    assert registered(registry_root) == []


def test_missing_path_and_file_path(tmp_path):
    res = invoke("rl", tmp_path / "nope")
    assert res.exit_code == 2 and "no such directory" in res.stderr
    f = tmp_path / "f.txt"
    f.write_text("x")
    res = invoke("sft", f)
    assert res.exit_code == 2 and "not a directory" in res.stderr


def test_through_nemotron_with_global_dry_run_and_light_help(tmp_path, registry_root):
    from tests.import_probes import nemotron_heavy_imports

    d = hf(tmp_path / "hf")
    env = {**os.environ, "NEMOTRON_ARTIFACTS_ROOT": str(registry_root), "COLUMNS": "250"}
    proc = subprocess.run([str(NEMOTRON), "nano3", "model", "import", "sft", str(d), "-d"], capture_output=True,
                          text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "dry run:" in proc.stdout and registered(registry_root) == []
    for args in (["nano3", "model", "import", "--help"], ["nano3", "model", "import", "pretrain", "-h"]):
        proc, heavy = nemotron_heavy_imports(args, tmp_path)
        assert "Usage" in proc.stdout and heavy == []
