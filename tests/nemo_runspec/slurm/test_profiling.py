"""`run.profile.nsys=true`: the rendered batch script, its guard, and the training side.

Not runnable here (no GPU, no nsys): checked are the exact script `--dry-run` shows
(the same bytes a submission writes), the guard run for real by bash without nsys
on PATH (the one-line error, exit 2), the options against nemo-run's own nsys
defaults, the trainer's start/stop around the requested steps, and Megatron-Bridge's
switch against the pinned wheel's source.
"""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from pathlib import Path

from nemo_runspec.slurm import profiling

NEMOTRON = Path(sys.executable).with_name("nemotron")
PROFILE = """
[cluster]
executor = "slurm"
account = "acct"
partition = "batch"
container_image = "nvcr.io/nvidia/nemo:25.11"
gpus_per_node = 8
nodes = 2
time = "01:00:00"
"""


def _dry_run(tmp_path: Path, *overrides: str, profile: str = PROFILE) -> subprocess.CompletedProcess[str]:
    (tmp_path / "env.toml").write_text(profile)
    env = {k: v for k, v in os.environ.items() if not k.startswith("NEMOTRON_")}
    env.update(NEMOTRON_HOME=str(tmp_path / "home"), NEMOTRON_ENV_FILE=str(tmp_path / "env.toml"),
               COLUMNS="250", NEMOTRON_ARTIFACTS_ROOT=str(tmp_path / "reg"))
    return subprocess.run([str(NEMOTRON), "nano3", "pretrain", "--batch", "cluster", "--dry-run", *overrides],
                          env=env, capture_output=True, text=True, timeout=300, cwd=tmp_path,
                          stdin=subprocess.DEVNULL)


def _launch_script(output: str) -> str:
    found = re.search(r"cat > \S*/runspec_launch\.sh <<'(\w+)'\n(.*?)\n\1\n", output, re.S)
    assert found, output[-3000:]
    return found.group(2) + "\n"


def test_dry_run_shows_the_nsys_wrapped_command(tmp_path):
    proc = _dry_run(tmp_path, "run.profile.nsys=true", "run.profile.start_step=20", "run.profile.end_step=25",
                    "run.profile.ranks=[0,8]")
    assert proc.returncode == 0, proc.stderr
    script = _launch_script(proc.stdout)
    lines = script.splitlines()
    assert lines[-3].startswith("command -v nsys >/dev/null 2>&1 || { echo 'error: run.profile.nsys is on")
    assert lines[-2] == "mkdir -p /nemo_run/nsys"  # in the container: the job dir is /nemo_run
    assert lines[-1].startswith(
        "exec nsys profile -s none -t nvtx,cuda -o '/nemo_run/nsys/profile_%p_%q{SLURM_JOB_ID}_node%q{SLURM_NODEID}"
        "_rank%q{SLURM_PROCID}' --force-overwrite=true --capture-range=cudaProfilerApi --capture-range-end=stop "
        "--cuda-graph-trace=node --cuda-event-trace=false torchrun ")
    assert "--nnodes 2 --nproc-per-node 8" in lines[-1]
    assert "export NEMOTRON_NSYS_STEPS=20:25" in proc.stdout and "export NEMOTRON_NSYS_RANKS=0,8" in proc.stdout
    assert re.search(r"^srun .* bash /nemo_run/runspec_launch\.sh$", proc.stdout, re.M)


def test_without_the_switch_nothing_changes(tmp_path):
    proc = _dry_run(tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "nsys" not in proc.stdout.replace("nsys", "", 0).split("# Command 1")[-1]
    assert "runspec_launch.sh" not in proc.stdout and "NEMOTRON_NSYS" not in proc.stdout


def test_profile_table_in_env_toml_and_bad_values(tmp_path):
    proc = _dry_run(tmp_path, profile=PROFILE + '\n[cluster.profiling]\nnsys = true\noutput_dir = "/lustre/me/prof"\n')
    assert proc.returncode == 0, proc.stderr
    assert "exec nsys profile -s none -t nvtx,cuda -o '/lustre/me/prof/profile_%p_" in proc.stdout
    bad = _dry_run(tmp_path, "run.profile.nsys=true", "run.profile.end_step=3")
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1
    assert "profiling.end_step (3) is before start_step (10)" in bad.stderr
    typo = _dry_run(tmp_path, "run.profile.nsyss=true")
    assert typo.returncode == 2 and "profiling.nsyss" in typo.stderr


def test_the_options_are_nemo_run_s_nsys_defaults():
    """What llmb gets through Megatron-Bridge's NsysPlugin: nemo-run's launcher defaults."""
    from nemo_runspec._nemo_run import lean

    lean()  # nemo-run's launcher module alone, not its package __init__
    from nemo_run.core.execution.launcher import Launcher

    theirs = Launcher(nsys_profile=True).get_nsys_prefix(profile_dir="/d")
    ours = profiling.nsys_command(profiling.NsysSettings(), "/d/nsys_profile")[1:]
    assert ours[:4] == theirs[:4]  # profile -s none -t
    assert ours[4] == theirs[4] == "nvtx,cuda"
    assert ours[7:12] == theirs[7:]  # the capture options, in order


def test_missing_nsys_is_one_line_exit_2_at_start(tmp_path):
    """The guard as the job runs it: bash, PATH without nsys."""
    out = tmp_path / "nsys-out"
    script = tmp_path / "launch.sh"
    lines = profiling.guard_lines(str(out))
    script.write_text("\n".join(["#!/bin/bash", *lines, "exec echo training would start"]) + "\n")
    bare = {"PATH": "/usr/bin:/bin"}
    proc = subprocess.run(["bash", str(script)], env=bare, capture_output=True, text=True)
    assert proc.returncode == 2
    assert proc.stderr == ("error: run.profile.nsys is on but nsys is not installed in the job's image "
                           "(use an image with Nsight Systems, or run.profile.nsys=false)\n")
    assert proc.stdout == "" and not out.exists()
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "nsys").write_text("#!/bin/sh\n")
    (fake / "nsys").chmod(0o755)
    proc = subprocess.run(["bash", str(script)], env={"PATH": f"{fake}:/usr/bin:/bin"}, capture_output=True, text=True)
    assert proc.returncode == 0 and proc.stdout == "training would start\n" and out.is_dir()


def test_ray_recipes_are_refused(tmp_path):
    (tmp_path / "env.toml").write_text(PROFILE)
    env = {k: v for k, v in os.environ.items() if not k.startswith("NEMOTRON_")}
    env.update(NEMOTRON_HOME=str(tmp_path / "home"), NEMOTRON_ENV_FILE=str(tmp_path / "env.toml"))
    proc = subprocess.run([str(NEMOTRON), "nano3", "rl", "--batch", "cluster", "--dry-run", "run.profile.nsys=true"],
                          env=env, capture_output=True, text=True, timeout=300, cwd=tmp_path, stdin=subprocess.DEVNULL)
    assert proc.returncode == 2 and "run.profile.nsys profiles torchrun and direct recipes" in proc.stderr


def test_trainer_starts_and_stops_the_capture_on_its_ranks(monkeypatch):
    import torch

    from nemotron.training.nsys import Capture

    calls = []
    monkeypatch.setattr(torch.cuda.profiler, "start", lambda: calls.append("start"))
    monkeypatch.setattr(torch.cuda.profiler, "stop", lambda: calls.append("stop"))
    monkeypatch.setattr(torch.cuda, "synchronize", lambda: None)
    env = {"NEMOTRON_NSYS_STEPS": "3:4", "NEMOTRON_NSYS_RANKS": "0,2"}
    for rank, expected in ((0, ["start@3", "stop@4"]), (1, []), (2, ["start@3", "stop@4"])):
        calls.clear()
        cap = Capture(rank, cuda=True, environ=env)
        seen = []
        for step in range(1, 7):
            cap.before(step)
            if calls and calls[-1] == "start" and "start" not in "".join(seen):
                seen.append(f"start@{step}")
            cap.after(step)
            if calls and calls[-1] == "stop" and not any(s.startswith("stop") for s in seen):
                seen.append(f"stop@{step}")
        assert seen == expected, rank


def test_cpu_run_says_nothing_is_captured(capsys):
    from nemotron.training.nsys import Capture

    cap = Capture(0, cuda=False, environ={"NEMOTRON_NSYS_STEPS": "1:2"})
    cap.before(1)
    cap.after(2)
    assert "this run is on the CPU: nothing to capture" in capsys.readouterr().err


def test_megatron_bridge_gets_its_profiling_config():
    from nemotron.training import megatron_bridge as mb
    from nemotron.training.nsys import native_profiling
    from tests.nemotron.megatron_bridge_wheel import wheel_root

    fields = native_profiling({"NEMOTRON_NSYS_STEPS": "10:12", "NEMOTRON_NSYS_RANKS": "0"})
    module, _, cls = mb.PROFILING_CONFIG.rpartition(".")
    source = (wheel_root().parent.parent / (module.replace(".", "/") + ".py")).read_text()
    node = next(n for n in ast.parse(source).body if isinstance(n, ast.ClassDef) and n.name == cls)
    names = {s.target.id for s in node.body if isinstance(s, ast.AnnAssign)}
    assert set(fields) <= names
    assert native_profiling({}) is None

    made = {}

    class Stand:
        def __init__(self, **kw):
            made.update(kw)

    tree = type("T", (), {})()
    tree.profiling = None
    os.environ["NEMOTRON_NSYS_STEPS"] = "10:12"
    try:
        container = mb.build_config("pretrain", {}, importer=lambda d: Stand if d == mb.PROFILING_CONFIG
                                    else (lambda: tree))
    finally:
        del os.environ["NEMOTRON_NSYS_STEPS"]
    assert isinstance(container.profiling, Stand)
    assert made == {"use_nsys_profiler": True, "profile_step_start": 10, "profile_step_end": 12, "profile_ranks": [0]}



