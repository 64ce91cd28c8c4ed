"""Resilience for the native backends: per-step heartbeats through their own hooks, and an
early stop (the libraries save and exit 0 before their end) turned into a requeue.

Megatron-Bridge cannot be imported here (transformer-engine), so its real
``CallbackManager`` is loaded from the pinned wheel's ``callbacks.py`` on its own and
``pretrain``'s ``callbacks`` parameter is read from the wheel's source; NeMo-RL's
save-state keys come from the vendored manifest of its pinned source.
"""

from __future__ import annotations

import ast
import importlib.metadata
import importlib.util
import json
import sys
import time
from pathlib import Path
from types import SimpleNamespace as NS
from typing import Any

import pytest

from nemotron.training import megatron_bridge as mb
from nemotron.training import nemo_rl as nrl
from nemotron.training.native_resilience import NativeResilience, grpo_finished
from nemotron.training.resilience import EXIT_REQUEUE, Resilience

MANIFEST = json.loads((Path(__file__).parent / "data" / "nemo_rl-v0.4.0.json").read_text())


def _wheel_file(dotted_module: str) -> Path:
    dist = importlib.metadata.distribution("megatron-bridge")
    return Path(dist.locate_file(dotted_module.replace(".", "/") + ".py"))


@pytest.fixture(scope="module")
def callback_manager() -> type:
    """The pinned wheel's real CallbackManager (its module imports only the standard library)."""
    path = _wheel_file(mb.CALLBACK_MANAGER.rpartition(".")[0])
    spec = importlib.util.spec_from_file_location("mb_callbacks", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclass looks the module up
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.modules[spec.name]
    return module.CallbackManager


def _record(job: Path, rank: int = 0, attempt: int = 0) -> list[str]:
    return (job / "heartbeat" / f"a{attempt}" / f"rank-{rank}").read_text().split()


@pytest.fixture
def job(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("NEMOTRON_RESILIENCE_DIR", str(tmp_path))
    monkeypatch.delenv("NEMOTRON_RESILIENCE_EXIT_AFTER", raising=False)
    monkeypatch.delenv("SLURM_RESTART_COUNT", raising=False)
    monkeypatch.setenv("RANK", "0")
    return tmp_path


def test_pinned_pretrain_takes_callbacks_and_fires_the_step_events():
    """The hook we use exists in the pinned wheel: pretrain(callbacks=), the two step events."""
    tree = ast.parse(_wheel_file("megatron.bridge.training.pretrain").read_text())
    fn = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "pretrain")
    assert "callbacks" in [a.arg for a in fn.args.args]
    train = _wheel_file("megatron.bridge.training.train").read_text()
    for event in ("on_train_step_start", "on_train_step_end"):
        assert f'"{event}"' in train
    # finetune takes none in 0.3.1: the run says so instead of passing them
    tree = ast.parse(_wheel_file("megatron.bridge.training.finetune").read_text())
    fn = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "finetune")
    assert "callbacks" not in [a.arg for a in fn.args.args]


def _importer(entry: Any, manager: type) -> Any:
    tree = NS(model=NS(), train=NS(), optimizer=NS(), scheduler=NS(), dataset=NS(), checkpoint=NS(), logger=NS())

    def importer(dotted: str) -> Any:
        if dotted == mb.RECIPES["pretrain"]:
            return lambda: tree
        if dotted == mb.ENTRY_POINTS["pretrain"]:
            return entry
        if dotted == mb.CALLBACK_MANAGER:
            return manager
        if dotted == mb.FORWARD_STEP:
            return "forward_step"
        raise AssertionError(dotted)
    return importer


def _pretrain(steps: int, *, stop_early: bool, seen: list[str]):
    """A stand-in for pretrain(config, forward_step_func, callbacks=None) driving the events as
    train.py does (train_state.step counts finished steps), then returning or sys.exit(0)."""
    def pretrain(config: Any, forward_step_func: Any, callbacks: Any = None) -> None:
        state = NS(train_state=NS(step=0))
        ctx = NS(state=state)
        for _ in range(steps):
            callbacks.fire("on_train_step_start", ctx)
            seen.append(" ".join(_record(Path(config._job))[:2]))
            callbacks.fire("on_train_step_end", ctx)
            seen.append(" ".join(_record(Path(config._job))[:2]))
            state.train_state.step += 1
        if stop_early:
            raise SystemExit(0)
    return pretrain


def test_megatron_bridge_beats_per_step_and_completes(job, callback_manager, monkeypatch):
    seen: list[str] = []
    monkeypatch.setattr(mb, "build_config", lambda kind, cfg, importer, **_: NS(_job=str(job)))
    rc = mb.run("pretrain", {}, importer=_importer(_pretrain(3, stop_early=False, seen=seen), callback_manager))
    assert rc == 0
    assert seen == ["1 init", "1 between", "2 step", "2 between", "3 step", "3 between"]
    assert _record(job)[:2] == ["3", "done"]
    assert not list(job.glob("stopped-a*"))


@pytest.mark.parametrize(("request_text", "exit_after", "why"),
                         [("USR1", None, "USR1"), (None, 0, "USR1"), (None, None, "TERM")])
def test_megatron_bridge_early_exit_is_a_requeue(job, callback_manager, monkeypatch, request_text, exit_after, why):
    """sys.exit(0) from train.py (its SIGTERM or duration save) -> stopped marker + EXIT_REQUEUE.
    Why: the batch shell's relayed warning, else the duration timer run out, else SIGTERM."""
    if request_text:
        (job / "stop_request").write_text(request_text + "\n")
    if exit_after is not None:
        monkeypatch.setenv("NEMOTRON_RESILIENCE_EXIT_AFTER", str(exit_after))
    monkeypatch.setattr(mb, "build_config", lambda kind, cfg, importer, **_: NS(_job=str(job)))
    rc = mb.run("pretrain", {}, importer=_importer(_pretrain(2, stop_early=True, seen=[]), callback_manager))
    assert rc == EXIT_REQUEUE
    assert (job / "stopped-a0").read_text() == f"2 {why}\n"
    assert _record(job)[:2] == ["2", "stop"]


def test_megatron_bridge_failure_exit_is_not_a_requeue(job, callback_manager, monkeypatch):
    def pretrain(config: Any, forward_step_func: Any, callbacks: Any = None) -> None:
        raise SystemExit(1)
    monkeypatch.setattr(mb, "build_config", lambda kind, cfg, importer, **_: NS(_job=str(job)))
    with pytest.raises(SystemExit) as info:
        mb.run("pretrain", {}, importer=_importer(pretrain, callback_manager))
    assert info.value.code == 1
    assert not (job / "stopped-a0").exists()


def test_without_resilience_the_library_exit_passes_through(tmp_path, callback_manager, monkeypatch):
    monkeypatch.delenv("NEMOTRON_RESILIENCE_DIR", raising=False)
    got: dict[str, Any] = {}

    def pretrain(config: Any, forward_step_func: Any, callbacks: Any = None) -> None:
        got["callbacks"] = callbacks
        raise SystemExit(0)
    monkeypatch.setattr(mb, "build_config", lambda kind, cfg, importer, **_: NS())
    with pytest.raises(SystemExit) as info:
        mb.run("pretrain", {}, importer=_importer(pretrain, callback_manager))
    assert info.value.code == 0 and got["callbacks"] is None
    assert not list(tmp_path.iterdir())


def test_entry_point_without_callbacks_beats_native_and_says_so(job, callback_manager, monkeypatch, capsys):
    def finetune(config: Any, forward_step_func: Any) -> None:  # Megatron-Bridge 0.3.1's signature
        assert _record(job)[:2] == ["0", "native"]
    monkeypatch.setattr(mb, "build_config", lambda kind, cfg, importer, **_: NS())
    assert mb.run("pretrain", {}, importer=_importer(finetune, callback_manager)) == 0
    assert "stall_timeout does not apply" in capsys.readouterr().err
    assert _record(job)[:2] == ["0", "done"]


def test_watchdog_phases_match_the_helper():
    """Every phase a native run writes is one the batch helper's watchdog knows: ``between`` and
    ``eval`` get startup_timeout, ``native`` is never a stall."""
    from nemo_runspec.slurm.resilience import script_text

    line = next(x for x in script_text().splitlines() if 'case "$phase" in' in x)
    assert "step) limit=$NR_STALL_TIMEOUT" in line
    assert "init|save|eval|between) limit=$NR_STARTUP_TIMEOUT" in line
    assert "native" not in line  # falls to "*) continue"


# --- NeMo-RL ---------------------------------------------------------------------------


def test_grpo_finished_reads_keys_the_pinned_save_state_has():
    keys = set(MANIFEST["grpo_save_state"]["required"])
    assert {"current_step", "total_steps", "current_epoch"} <= keys
    grpo = {"max_num_steps": 10, "max_num_epochs": 2}
    assert grpo_finished({"total_steps": 10, "current_step": 4, "current_epoch": 1}, grpo, 6, asynchronous=False)
    # the epochs ran out before max_num_steps: saved at the last batch of the last epoch
    assert grpo_finished({"total_steps": 8, "current_step": 4, "current_epoch": 1}, grpo, 4, asynchronous=False)
    assert not grpo_finished({"total_steps": 7, "current_step": 3, "current_epoch": 1}, grpo, 4, asynchronous=False)
    assert not grpo_finished({"total_steps": 5, "current_step": 5, "current_epoch": 0}, grpo, 5, asynchronous=False)
    assert grpo_finished({"current_step": 10}, grpo, None, asynchronous=True)
    assert not grpo_finished({"current_step": 9}, grpo, None, asynchronous=True)
    assert set(grpo) <= set(MANIFEST["typed_dicts"]["grpo"]["required"])


class _Logger:
    def __init__(self) -> None:
        self.logged: list[tuple[int, str]] = []

    def log_metrics(self, metrics: dict, step: int, prefix: str = "", step_metric: str | None = None) -> None:
        self.logged.append((step, prefix))


def _rl_run(monkeypatch, job: Path, save_state: dict, steps: int) -> tuple[int, list[str], _Logger]:
    """nrl.run's tail with stand-ins: setup's logger and save state, a grpo_train logging per step."""
    logger, beats = _Logger(), []
    setup = ("policy", "gen", "clusters", list(range(4)), "val", "loss", logger, "ckpt", save_state,
             {"grpo": {"max_num_steps": 10, "max_num_epochs": 1}})

    def grpo_train(*args: Any) -> None:
        assert args[8] is logger
        for s in range(1, steps + 1):
            args[8].log_metrics({"loss": 1.0}, s, prefix="train")
            beats.append(" ".join(_record(job)[:2]))

    names = {"setup": lambda *a: setup, "grpo_train": grpo_train, "load_config": lambda path: {},
             "get_next_experiment_dir": lambda d: d, "init_ray": lambda: None, "get_tokenizer": lambda c: "tok",
             "configure_generation_config": lambda c, t: c}
    monkeypatch.setattr(nrl, "master_config", lambda cfg, load, **_: {
        "data": {"train_data_path": "x", "output_key": "answer"}, "logger": {"log_dir": "l"},
        "policy": {"tokenizer": {}, "generation": {}}, "grpo": {"max_num_steps": 10, "max_num_epochs": 1}})
    monkeypatch.setattr(nrl, "check_records", lambda *a, **k: None)
    monkeypatch.setattr(nrl, "build_datasets", lambda *a: ("d", "v", {}, {}))
    rc = nrl.run({}, [], importer=lambda dotted: names[{v: k for k, v in nrl.NAMES.items()}[dotted]],
                 line=nrl.LINES[0])
    return rc, beats, logger


def test_nemo_rl_beats_on_its_metrics_and_completes(job, monkeypatch):
    rc, beats, logger = _rl_run(monkeypatch, job, {"total_steps": 10, "current_step": 10, "current_epoch": 0}, 3)
    assert rc == 0 and beats == ["1 step", "2 step", "3 step"]
    assert logger.logged == [(1, "train"), (2, "train"), (3, "train")]  # the library's own call still runs
    assert _record(job)[:2] == ["3", "done"] and not (job / "stopped-a0").exists()


def test_nemo_rl_timeout_save_is_a_requeue(job, monkeypatch):
    """grpo_train returned after its checkpoint_must_save_by save at step 3 of 10: requeue."""
    monkeypatch.setenv("NEMOTRON_RESILIENCE_EXIT_AFTER", "0")
    rc, _beats, _logger = _rl_run(monkeypatch, job, {"total_steps": 3, "current_step": 3, "current_epoch": 0}, 3)
    assert rc == EXIT_REQUEUE
    assert (job / "stopped-a0").read_text() == "3 USR1\n"


def test_why_stopped_is_term_before_the_timer(job):
    native = NativeResilience(Resilience(job, 0), exit_after=3600)
    native.started = time.time()
    assert native.why_stopped() == "TERM"
    native.started -= 3600
    assert native.why_stopped() == "USR1"
