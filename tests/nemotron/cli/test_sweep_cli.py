"""`-m/--multirun` from the command line, offline: here (points one after another, or
--parallel at once; a failing point does not stop the others; a rerun runs only what
did not complete) and on Slurm against stand-in sbatch/sacct/scancel (one sbatch per
sweep, `nemotron jobs` on SWEEP and SWEEP:N with one sacct call, resume)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

NEMOTRON = Path(sys.executable).with_name("nemotron")
SCRIPT = '''"""A recipe that records each run and fails for x=2."""
# /// script
# [tool.runspec]
# schema = "1"
# name = "team/sweepy"
# [tool.runspec.run]
# launch = "direct"
# [tool.runspec.resources]
# nodes = 1
# gpus_per_node = 0
# ///
import json, os, sys
from pathlib import Path
cfg = Path(sys.argv[sys.argv.index("--config") + 1]).read_text()
x = int(next(l.split(":")[1] for l in cfg.splitlines() if l.startswith("x:")))
with open(os.environ["RUNS_LOG"], "a") as f:
    f.write(json.dumps({"x": x, "sweep": os.environ.get("NEMOTRON_SWEEP_ID"),
                        "index": os.environ.get("NEMOTRON_SWEEP_INDEX")}) + "\\n")
print(f"x={x} loss {x / 10}")
sys.exit(1 if x == 2 else 0)
'''

SACCT = r'''#!/bin/sh
echo "sacct $*" >> "$FAKE_DIR/calls.log"
cat "$FAKE_DIR/sacct.out" 2>/dev/null
'''
SBATCH = r'''#!/bin/sh
echo "sbatch $*" >> "$FAKE_DIR/calls.log"
n=$(cat "$FAKE_DIR/next" 2>/dev/null || echo 500); echo $((n + 1)) > "$FAKE_DIR/next"; echo $n
'''
OTHER = '#!/bin/sh\necho "$(basename $0) $*" >> "$FAKE_DIR/calls.log"\n'


def _sandbox(tmp: Path) -> dict:
    (tmp / "r" / "team" / "config").mkdir(parents=True)
    script = tmp / "r" / "team" / "sweepy.py"
    script.write_text(SCRIPT)
    (tmp / "r" / "team" / "config" / "default.yaml").write_text("x: 0\nname: n\n")
    fake = tmp / "fake"
    (fake / "bin").mkdir(parents=True)
    for name, text in (("sbatch", SBATCH), ("sacct", SACCT), ("scancel", OTHER), ("squeue", OTHER),
                       ("sinfo", "#!/bin/sh\nexit 1\n"), ("scontrol", "#!/bin/sh\nexit 1\n")):
        (fake / "bin" / name).write_text(text)
        (fake / "bin" / name).chmod(0o755)
    (tmp / "env.toml").write_text(textwrap.dedent("""
        [dev]
        executor = "slurm"
        account = "acct"
        partition = "batch"
        container_image = ""
        gpus_per_node = 0
        packager = "self_contained"
    """))
    env = {k: v for k, v in os.environ.items() if not k.startswith("NEMOTRON_")}
    env.update(NEMOTRON_HOME=str(tmp / "home"), NEMOTRON_ENV_FILE=str(tmp / "env.toml"), COLUMNS="250",
               RUNS_LOG=str(tmp / "runs.log"), FAKE_DIR=str(fake), NEMORUN_HOME=str(tmp / "home" / "nr"),
               PATH=f"{fake / 'bin'}:{os.environ['PATH']}", NEMOTRON_ARTIFACTS_ROOT=str(tmp / "reg"))
    return {"tmp": tmp, "script": script, "env": env, "fake": fake}


def _nemotron(sb: dict, *argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(NEMOTRON), *argv], cwd=sb["tmp"], env=sb["env"], capture_output=True, text=True,
                          timeout=300, stdin=subprocess.DEVNULL)


def _runs(sb: dict) -> list[dict]:
    path = sb["tmp"] / "runs.log"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def _calls(sb: dict, command: str) -> list[str]:
    path = sb["fake"] / "calls.log"
    return [c for c in path.read_text().splitlines() if c.startswith(command + " ")] if path.exists() else []


def test_without_m_a_sweep_on_a_number_is_one_line_suggesting_m(tmp_path):
    sb = _sandbox(tmp_path)
    proc = _nemotron(sb, "nano3", "pretrain", "-c", "tiny", "train.train_iters=10,20", "--dry-run")
    assert proc.returncode == 2, proc.stdout[-500:]
    lines = proc.stderr.strip().splitlines()
    assert lines == ["error: override 'train.train_iters=10,20' gives the number train.train_iters (now 20) several "
                     "values (add -m/--multirun to run one job per value, or give one value: train.train_iters=10)"]


def test_parallel_points_write_their_own_logs(tmp_path):
    sb = _sandbox(tmp_path)
    proc = _nemotron(sb, "run", str(sb["script"]), "-m", "x=1,3", "--parallel", "2")
    assert proc.returncode == 0, proc.stderr
    sweep = _runs(sb)[0]["sweep"]
    logs = sb["tmp"] / "home" / "sweeps" / sweep
    assert "x=1 loss 0.1" in (logs / "point-0.log").read_text()
    assert "x=3 loss 0.3" in (logs / "point-1.log").read_text()
    bad = _nemotron(sb, "run", str(sb["script"]), "-m", "x=1,3", "--parallel", "0")
    assert bad.returncode == 2 and "--parallel must be a whole number >= 1" in bad.stderr


def test_on_slurm_one_sbatch_jobs_commands_and_resume(tmp_path):
    sb = _sandbox(tmp_path)
    proc = _nemotron(sb, "run", str(sb["script"]), "-m", "x=1,2,3", "--batch", "dev")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    sweep = out["sweep_id"]
    assert [a["job_id"] for a in out["arrays"]] == ["500"]
    assert [p["job_id"] for p in out["points"]] == ["500_0", "500_1", "500_2"]
    assert len(_calls(sb, "sbatch")) == 1
    script = Path(_calls(sb, "sbatch")[0].split()[-1]).read_text()
    assert "#SBATCH --array=0-2\n" in script
    # Slurm's word on the tasks: 0 and 2 done, 1 failed
    (sb["fake"] / "sacct.out").write_text("500_0|COMPLETED|0:0|None|n1|t|t\n500_1|FAILED|1:0|None|n2|t|t\n"
                                          "500_2|COMPLETED|0:0|None|n1|t|t\n")
    listed = _nemotron(sb, "jobs", "list")
    assert listed.returncode == 0, listed.stderr
    assert sweep in listed.stdout and "3 points: 2 COMPLETED, 1 FAILED" in listed.stdout
    assert len(_calls(sb, "sacct")) == 1  # one accounting call for the whole sweep
    status = _nemotron(sb, "jobs", "status", f"{sweep}:1", "--json")
    point = json.loads(status.stdout)["points"][0]
    assert point["job_id"] == "500_1" and point["state"] == "FAILED" and point["exit_code"] == 1
    rerun = _nemotron(sb, "run", str(sb["script"]), "-m", "x=1,2,3", "--batch", "dev")
    assert rerun.returncode == 0, rerun.stderr
    second = Path(_calls(sb, "sbatch")[1].split()[-1]).read_text()
    assert "#SBATCH --array=1\n" in second  # only the point that did not complete
    (sb["fake"] / "sacct.out").write_text("500_0|COMPLETED|0:0|None|n1|t|t\n500_2|COMPLETED|0:0|None|n1|t|t\n"
                                          "501_[1]|PENDING|0:0|Priority|None|t|t\n")
    queued = _nemotron(sb, "run", str(sb["script"]), "-m", "x=1,2,3", "--batch", "dev")
    assert queued.returncode == 0 and len(_calls(sb, "sbatch")) == 2  # point 1 waits in 501: not again
    assert "2 of 3 points completed before, 1 still queued or running (1); submitting 0" in queued.stderr
    cancel = _nemotron(sb, "jobs", "cancel", f"{sweep}:1")
    assert cancel.returncode == 0, cancel.stderr
    assert _calls(sb, "scancel") == ["scancel 501_1"]
    whole = _nemotron(sb, "jobs", "cancel", "501")  # an array's Slurm id names its sweep
    assert _calls(sb, "scancel")[-1] == "scancel 501"
    assert whole.returncode == 0
    nothing = _nemotron(sb, "jobs", "status", f"{sweep}:7")
    assert nothing.returncode == 2 and f"sweep {sweep} has no point '7'" in nothing.stderr


def test_sweep_options_are_global_but_no_resume_stays_the_commands():
    from nemo_runspec.cmdline.context import split_global_args

    gctx, rest = split_global_args(["nano3", "pipe", "-dm", "--parallel", "3", "--no-resume", "--scales",
                                    "--allow-untested-scale", "x=1"])
    assert (gctx.dry_run, gctx.multirun, gctx.parallel, gctx.scales, gctx.allow_untested_scale) == \
        (True, True, "3", True, True)
    assert rest == ["nano3", "pipe", "--no-resume", "x=1"]  # pipe's own --no-resume reaches it
