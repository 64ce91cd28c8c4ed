"""The training side of resilience: heartbeat records, stop requests, the stopped marker."""

from __future__ import annotations

import os
import signal
from pathlib import Path

from nemotron.training.resilience import RECORD_BYTES, STOP_TERM, STOP_WARNING, Resilience


def test_disabled_without_a_directory(monkeypatch):
    monkeypatch.delenv("NEMOTRON_RESILIENCE_DIR", raising=False)
    res = Resilience.from_env(0)
    assert not res.enabled and res.stop_code() == 0.0
    res.beat(1, "step")  # no-op
    res.close(1)


def test_heartbeat_is_one_fixed_record_overwritten(tmp_path, monkeypatch):
    monkeypatch.setenv("SLURM_RESTART_COUNT", "2")
    monkeypatch.setenv("SLURMD_NODENAME", "n7")
    res = Resilience(tmp_path, rank=1)
    handlers = {sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGUSR1)}
    try:
        res.beat(12345, "step")
        res.beat(3, "save")
        path = tmp_path / "heartbeat" / "a2" / "rank-1"
        data = path.read_bytes()
        assert len(data) == RECORD_BYTES and data.endswith(b"\n")
        step, phase, _t, node, rank = data.decode().split()
        assert (step, phase, node, rank) == ("3", "save", "n7", "1")
    finally:
        res.close(3)
        for sig, h in handlers.items():
            signal.signal(sig, h)


def test_stop_request_file_signal_and_marker(tmp_path, monkeypatch):
    monkeypatch.delenv("SLURM_RESTART_COUNT", raising=False)
    res = Resilience(tmp_path, rank=0)
    handlers = {sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGUSR1)}
    try:
        assert res.stop_code() == 0.0
        (tmp_path / "stop_request").write_text("USR1\n")
        res._next_poll = 0.0
        assert res.stop_code() == STOP_WARNING
        os.kill(os.getpid(), signal.SIGTERM)  # handled: a flag, not an exit
        assert res.stop_code() == STOP_TERM
        res.log_step(1, 2.5)
        res.stopped(10, STOP_TERM + STOP_WARNING)
        assert (tmp_path / "stopped-a0").read_text() == "10 TERM\n"
        assert '"loss": 2.5' in (tmp_path / "steps.jsonl").read_text()
    finally:
        res.close(10)
        for sig, h in handlers.items():
            signal.signal(sig, h)


def test_megatron_bridge_mapping_names_fields_of_the_pinned_wheel():
    """Every field set exists on the installed megatron-bridge 0.3.1 TrainingConfig (read as source)."""
    import ast
    import importlib.util
    import signal as sig

    from nemotron.training.megatron_bridge import RESILIENCE_FIELDS, resilience_fields

    spec = importlib.util.find_spec("megatron")
    (root,) = spec.submodule_search_locations
    path = os.path.join(root, "bridge", "training", "config.py")
    tree = ast.parse(open(path).read())
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "TrainingConfig")
    fields = {n.target.id for n in cls.body if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)}
    assert {f.split(".", 1)[1] for f in RESILIENCE_FIELDS} <= fields
    assert resilience_fields({}) == {}
    got = resilience_fields({"NEMOTRON_RESILIENCE_DIR": "/j/resilience", "NEMOTRON_RESILIENCE_EXIT_AFTER": "3599"})
    assert got == {"train.exit_signal_handler": True, "train.exit_signal": sig.SIGTERM,
                   "train.exit_duration_in_mins": 59}
    assert set(got) == set(RESILIENCE_FIELDS)


def test_nemo_rl_mapping_names_keys_of_the_pinned_source():
    """checkpointing.enabled / checkpoint_must_save_by exist in NeMo-RL v0.4.0's CheckpointingConfig
    (the vendored manifest, re-derived from the source by tests/nemotron/training/test_nemo_rl.py)."""
    import json

    from nemotron.training.nemo_rl import resilience_checkpointing

    manifest = json.loads((Path(__file__).parent / "data" / "nemo_rl-v0.4.0.json").read_text())
    checkpointing = manifest["typed_dicts"]["checkpointing"]
    got = resilience_checkpointing({"NEMOTRON_RESILIENCE_DIR": "/j", "NEMOTRON_RESILIENCE_EXIT_AFTER": "93784"})
    assert got == {"enabled": True, "checkpoint_must_save_by": "01:02:03:04"}
    assert set(got) <= set(checkpointing["required"] + checkpointing["optional"])
    assert resilience_checkpointing({}) == {}
