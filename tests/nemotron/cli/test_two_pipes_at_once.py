"""Two real `nano3 pipe` runs at once on one NEMOTRON_HOME and registry never mix.

Pipe A pretrains, then its SFT stage waits (a startup command holding on a marker
file) while pipe B, with another pretraining config, publishes a newer pretrain
model. Then A's SFT starts: it must train on A's own pretrain model (the version A
published), not on ``:latest`` (B's). The version A's SFT publishes records the
exact versions it was made from, and A's pins are in its environment.

A third case: an input from outside the pipe (the data prep run by hand) is used
as it was when the pipe started, though a newer version appears meanwhile.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

from nemo_runspec.artifacts.registry import ArtifactRegistry

NEMOTRON = Path(sys.executable).with_name("nemotron")
MODEL, SFT_MODEL, DATA = "nano3-pretrain-model-tiny", "nano3-sft-model-tiny", "nano3-pretrain-data-tiny"


def _env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("NEMOTRON_")}
    env.update(NEMOTRON_HOME=str(tmp_path / "home"), NEMOTRON_ARTIFACTS_ROOT=str(tmp_path / "reg"),
               NEMOTRON_ENV_FILE=str(tmp_path / "none.toml"))
    (tmp_path / "none.toml").write_text("")
    return env


def _wait_for(proc: subprocess.Popen[str], ready, timeout: float = 600) -> None:  # noqa: ANN001
    deadline = time.monotonic() + timeout
    while not ready():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline
        time.sleep(0.2)


def _versions(reg: ArtifactRegistry, name: str) -> list:  # noqa: ANN401
    try:
        return reg.versions(name)
    except Exception:  # noqa: BLE001 - not published yet
        return []


def test_a_pipe_consumes_what_its_own_stages_published_while_another_pipe_publishes(tmp_path):
    env = _env(tmp_path)
    reg = ArtifactRegistry(tmp_path / "reg")
    gate = tmp_path / "go-on"
    hold = f'+sft.run.env.startup_commands=["while [ ! -e {gate} ]; do sleep 0.2; done"]'
    a = subprocess.Popen([str(NEMOTRON), "nano3", "pipe", "-c", "tiny", "--stages", "prep-pretrain:sft",
                          "pretrain.fallback.max_steps=2", "sft.fallback.max_steps=2", hold],
                         cwd=tmp_path, env=env, text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         stdin=subprocess.DEVNULL)
    try:
        _wait_for(a, lambda: len(_versions(reg, MODEL)) == 1)
        a_model = _versions(reg, MODEL)[0]
        b = subprocess.run([str(NEMOTRON), "nano3", "pipe", "-c", "tiny", "--stages", "prep-pretrain:pretrain",
                            "pretrain.fallback.max_steps=3"], cwd=tmp_path, env=env, text=True,
                           capture_output=True, timeout=900, stdin=subprocess.DEVNULL)
        assert b.returncode == 0, b.stderr[-3000:]
        b_model = reg.resolve(f"{MODEL}:latest")
        assert b_model.version == 2 and b_model.metadata["pipe_id"] != a_model.metadata["pipe_id"]
    finally:
        gate.touch()
    out, err = a.communicate(timeout=900)
    assert a.returncode == 0, err[-3000:]
    started_from = re.search(r"^\[sft\] initialized from (\S+) ", out, re.M)
    assert started_from, out[-3000:]
    assert Path(started_from.group(1)).parent == Path(a_model.path) or \
        Path(started_from.group(1)).is_relative_to(a_model.path), (started_from.group(1), a_model.path, b_model.path)
    sft = reg.resolve(f"{SFT_MODEL}:latest")
    assert sft.metadata["inputs"][f"{MODEL}:latest"] == a_model.ref  # recorded: what it was made from


def test_an_input_from_outside_the_pipe_is_the_version_there_was_when_the_pipe_started(tmp_path):
    env = _env(tmp_path)
    reg = ArtifactRegistry(tmp_path / "reg")
    prep = [str(NEMOTRON), "nano3", "data", "prep", "pretrain", "-c", "tiny"]
    first = subprocess.run(prep, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600,
                           stdin=subprocess.DEVNULL)
    assert first.returncode == 0, first.stderr[-3000:]
    v1 = reg.resolve(f"{DATA}:latest")
    gate = tmp_path / "go-on"
    hold = f'+pretrain.run.env.startup_commands=["while [ ! -e {gate} ]; do sleep 0.2; done"]'
    pipe = subprocess.Popen([str(NEMOTRON), "nano3", "pipe", "-c", "tiny", "--stages", "pretrain",
                             "pretrain.fallback.max_steps=2", hold], cwd=tmp_path, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
    try:
        _wait_for(pipe, lambda: list((tmp_path / "home" / "jobs").glob("nano3-pretrain/*/train.yaml")))
        # meanwhile a newer version of the same data (another sample: another output dir)
        again = subprocess.run([*prep, "sample=100"], cwd=tmp_path, env=env, capture_output=True, text=True,
                               timeout=600, stdin=subprocess.DEVNULL)
        assert again.returncode == 0, again.stderr[-3000:]
        assert reg.resolve(f"{DATA}:latest").version == 2
    finally:
        gate.touch()
    out, err = pipe.communicate(timeout=900)
    assert pipe.returncode == 0, err[-3000:]
    model = reg.resolve(f"{MODEL}:latest")
    assert model.metadata["inputs"][f"{DATA}:latest"] == v1.ref


def test_an_import_and_another_data_prep_of_the_same_name_do_not_reach_the_pipe(tmp_path):
    """While the pipe's pretraining waits to start, the same artifact name gets two newer
    versions: another data prep (another sample, so another dir) and an import of that dir.
    The pipe's pretraining still reads what the pipe's own data prep published."""
    env = _env(tmp_path)
    reg = ArtifactRegistry(tmp_path / "reg")
    gate = tmp_path / "go-on"
    hold = f'+pretrain.run.env.startup_commands=["while [ ! -e {gate} ]; do sleep 0.2; done"]'
    pipe = subprocess.Popen([str(NEMOTRON), "nano3", "pipe", "-c", "tiny", "--stages", "prep-pretrain:pretrain",
                             "pretrain.fallback.max_steps=2", hold], cwd=tmp_path, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
    try:
        _wait_for(pipe, lambda: list((tmp_path / "home" / "jobs").glob("nano3-pretrain/*/train.yaml")))
        ours = reg.resolve(f"{DATA}:latest")
        other = subprocess.run([str(NEMOTRON), "nano3", "data", "prep", "pretrain", "-c", "tiny", "sample=100"],
                               cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600,
                               stdin=subprocess.DEVNULL)
        assert other.returncode == 0, other.stderr[-3000:]
        imported = subprocess.run([str(NEMOTRON), "nano3", "data", "import", "pretrain",
                                   reg.resolve(f"{DATA}:latest").path, "--name", DATA], cwd=tmp_path, env=env,
                                  capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL)
        assert imported.returncode == 0, imported.stderr[-3000:]
        assert [v.version for v in reg.versions(DATA)] == [1, 2, 3]
    finally:
        gate.touch()
    out, err = pipe.communicate(timeout=900)
    assert pipe.returncode == 0, err[-3000:]
    model = reg.resolve(f"{MODEL}:latest")
    assert model.metadata["inputs"][f"{DATA}:latest"] == ours.ref == f"{DATA}:v1"
