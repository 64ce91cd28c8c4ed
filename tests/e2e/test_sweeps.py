"""Sweeps on the local two-node cluster (docs/sweeps.md): one `sbatch --array` per sweep
(the sbatch and sacct this CLI runs are wrapped by scripts on PATH that log each call
and exec the real ones), a failing point that does not stop the others, a rerun that
submits only it, `nemotron jobs` on the sweep, a Ray data-prep sweep and a sweep inside
the pyxis test image. Each test looks only at its own jobs."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from .helpers import cli_env

pytestmark = [pytest.mark.slurm]

NEMOTRON = Path(sys.executable).with_name("nemotron")
REPO = Path(__file__).resolve().parents[2]
FINISHED = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "OUT_OF_MEMORY", "NODE_FAIL"}


def _wrapped(tmp_path: Path, env: dict[str, str]) -> Path:
    """sbatch and sacct on PATH log their arguments to calls.log, then run the real ones."""
    bin_dir = tmp_path / "wrap"
    bin_dir.mkdir()
    log = tmp_path / "calls.log"
    for name in ("sbatch", "sacct"):
        real = shutil.which(name)
        assert real, f"{name} is not installed"
        (bin_dir / name).write_text(f'#!/bin/sh\necho "{name} $*" >> {log}\nexec {real} "$@"\n')
        (bin_dir / name).chmod(0o755)
    env["PATH"] = f"{bin_dir}:{env['PATH']}"
    return log


def _calls(log: Path, name: str) -> list[str]:
    return [c for c in log.read_text().splitlines() if c.startswith(name + " ")] if log.exists() else []


def _nemotron(env: dict[str, str], cwd: Path, *argv: str, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run([str(NEMOTRON), *argv], env=env, cwd=cwd, capture_output=True, text=True,
                          timeout=timeout, stdin=subprocess.DEVNULL)


def _tasks(array_id: str) -> dict[int, tuple[str, str]]:
    out = subprocess.run(["sacct", "-n", "-P", "-X", "-j", array_id, "-o", "JobID,State,ExitCode"],
                         capture_output=True, text=True).stdout
    found = {}
    for line in out.splitlines():
        job, state, code = line.split("|")
        if "_" in job and "[" not in job:
            found[int(job.split("_")[1])] = (state.split()[0], code)
    return found


def _wait(array_id: str, points: list[int], timeout: float = 300) -> dict[int, tuple[str, str]]:
    deadline = time.monotonic() + timeout
    tasks: dict[int, tuple[str, str]] = {}
    while time.monotonic() < deadline:
        tasks = _tasks(array_id)
        if all(i in tasks and tasks[i][0] in FINISHED for i in points):
            return tasks
        time.sleep(1)
    pytest.fail(f"array {array_id} not finished after {timeout}s: {tasks}")


def _sweep_json(proc: subprocess.CompletedProcess) -> dict:
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _recipe(tmp_path: Path, name: str, run: str, body: str) -> Path:
    """A direct-launch recipe script ``name`` (its ``[tool.runspec.run]`` lines ``run``)
    with a config dir holding ``default.yaml`` (``x: 0``)."""
    script = tmp_path / f"{name}.py"
    script.write_text(f'# /// script\n# [tool.runspec]\n# name = "e2e/{name}"\n# [tool.runspec.run]\n'
                      f'# launch = "direct"\n{run}# [tool.runspec.resources]\n# gpus_per_node = 0\n# ///\n'
                      + body)
    (tmp_path / "config").mkdir(exist_ok=True)
    (tmp_path / "config" / "default.yaml").write_text("x: 0\n")
    return script


def _tiny_data(env: dict[str, str], cwd: Path) -> None:
    prep = _nemotron(env, cwd, "nano3", "data", "prep", "pretrain", "-c", "tiny")  # here, in seconds
    assert prep.returncode == 0, prep.stderr[-2000:]


def test_tiny_pretrain_sweep_is_one_array_a_failed_point_reruns_alone_and_jobs_see_it(tmp_path, slurm_cluster):
    env = cli_env(tmp_path, slurm_cluster, NEMOTRON_ARTIFACTS_ROOT=str(tmp_path / "reg"))
    _tiny_data(env, tmp_path)
    log = _wrapped(tmp_path, env)
    # n_head=3 does not divide the model width (64): that point fails when it builds its model
    argv = ["nano3", "pretrain", "-c", "tiny", "-m", "fallback.model.n_head=1,2,4,3", "fallback.max_steps=4",
            "--batch", "cluster"]
    out = _sweep_json(_nemotron(env, tmp_path, *argv))
    sweep, array = out["sweep_id"], out["arrays"][0]["job_id"]
    assert len(_calls(log, "sbatch")) == 1 and out["arrays"][0]["array"] == "0-3"
    tasks = _wait(array, [0, 1, 2, 3])
    assert {i: s for i, (s, _) in tasks.items()} == {0: "COMPLETED", 1: "COMPLETED", 2: "COMPLETED", 3: "FAILED"}
    for p in out["points"]:  # each point: its own dir, config and log
        assert Path(p["log"]).parent.name == str(p["index"])
        train = (Path(p["log"]).parent / "train.yaml").read_text()
        assert f"n_head: {p['values']['fallback.model.n_head']}" in train

    before = len(_calls(log, "sacct"))
    listed = _nemotron(env, tmp_path, "jobs", "list")
    assert listed.returncode == 0, listed.stderr
    assert f"{sweep}  4 points: 3 COMPLETED, 1 FAILED" in listed.stdout
    assert len(_calls(log, "sacct")) - before == 1  # one accounting call for every point
    status = _nemotron(env, tmp_path, "jobs", "status", sweep, "--json")
    points = json.loads(status.stdout)["points"]
    assert [(p["state"], p["exit_code"]) for p in points] == [("COMPLETED", 0)] * 3 + [("FAILED", 1)]
    assert all(float(p["loss"]) > 0 for p in points[:3]) and points[3]["loss"] == "-"
    logs = _nemotron(env, tmp_path, "jobs", "logs", f"{sweep}:2")
    assert logs.returncode == 0 and "final loss" in logs.stdout
    followed = _nemotron(env, tmp_path, "jobs", "logs", "-f", f"{array}_3")  # Slurm's name for the task
    assert followed.returncode == 1 and "FAILED (exit code 1" in followed.stderr

    from nemo_runspec.artifacts.registry import ArtifactRegistry

    versions = ArtifactRegistry(tmp_path / "reg").versions("nano3-pretrain-model-tiny")
    assert sorted(v.metadata["sweep"]["index"] for v in versions) == [0, 1, 2]
    assert {v.metadata["sweep"]["id"] for v in versions} == {sweep}
    assert sorted(v.metadata["sweep"]["values"]["fallback.model.n_head"] for v in versions) == ["1", "2", "4"]
    assert all("fallback.max_steps=4" in v.metadata["sweep"]["overrides"] for v in versions)
    assert len({v.path for v in versions}) == 3  # each point published its own checkpoint

    rerun = _sweep_json(_nemotron(env, tmp_path, *argv))
    assert len(_calls(log, "sbatch")) == 2
    assert rerun["arrays"][0]["array"] == "3" and [p["index"] for p in rerun["points"]] == [3]
    second = rerun["arrays"][0]["job_id"]
    assert _wait(second, [3])[3][0] == "FAILED"
    again = _nemotron(env, tmp_path, "jobs", "status", f"{sweep}:3", "--json")
    assert json.loads(again.stdout)["points"][0]["job_id"] == f"{second}_3"


def test_cancel_one_point_then_the_sweep(tmp_path, slurm_cluster):
    env = cli_env(tmp_path, slurm_cluster, 'sbatch_options = { begin = "now+1hour" }\n'
                  'env_vars = { HF_TOKEN = "hf_e2eSweepSecret0123456789abcdef" }\n', name="held")
    script = tmp_path / "hello.py"
    script.write_text('# /// script\n# [tool.runspec]\n# name = "e2e/hello"\n# [tool.runspec.run]\n'
                      '# launch = "direct"\n# [tool.runspec.resources]\n# gpus_per_node = 0\n# ///\nprint("hi")\n')
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "default.yaml").write_text("x: 0\n")
    env["NEMOTRON_HOME"] = str(tmp_path / "home")
    out = _sweep_json(_nemotron(env, tmp_path, "run", str(script), "-m", "x=1,2,3", "--batch", "held"))
    sweep, array = out["sweep_id"], out["arrays"][0]["job_id"]
    job_dir = Path(out["arrays"][0]["job_dir"])
    assert all((job_dir / "points" / str(i) / ".nemotron-secrets.env").exists() for i in range(3))
    one = _nemotron(env, tmp_path, "jobs", "cancel", f"{sweep}:1")
    assert one.returncode == 0, one.stderr
    deadline = time.monotonic() + 60  # until accounting has the array (it lags the queue)
    while True:
        status = json.loads(_nemotron(env, tmp_path, "jobs", "status", sweep, "--json").stdout)["points"]
        if status[1]["state"] != "UNKNOWN" or time.monotonic() > deadline:
            break
        time.sleep(2)
    assert [p["state"] for p in status] == ["PENDING", "CANCELLED", "PENDING"]
    assert "cancelled before it started" in status[1]["reason"]
    assert subprocess.run(["squeue", "-h", "-r", "-j", array, "-o", "%i"], capture_output=True,
                          text=True).stdout.split() == [f"{array}_0", f"{array}_2"]  # the others wait on
    assert not (job_dir / "points" / "1" / ".nemotron-secrets.env").exists()
    whole = _nemotron(env, tmp_path, "jobs", "cancel", sweep)
    assert whole.returncode == 0 and f"cancelled array {array}" in whole.stdout
    deadline = time.monotonic() + 60
    while subprocess.run(["squeue", "-h", "-r", "-j", array, "-o", "%i"], capture_output=True,
                         text=True).stdout.strip() and time.monotonic() < deadline:
        time.sleep(1)
    assert not any((job_dir / "points" / str(i) / ".nemotron-secrets.env").exists() for i in range(3))


def test_ray_data_prep_sweep_of_two_points(tmp_path, slurm_cluster):
    env = cli_env(tmp_path, slurm_cluster, "ray_timeout = 240\n", NEMOTRON_ARTIFACTS_ROOT=str(tmp_path / "reg"))
    log = _wrapped(tmp_path, env)
    proc = _nemotron(env, tmp_path, "nano3", "data", "prep", "pretrain", "-c", "tiny", "-m", "num_shards=2,3",
                     "--run", "cluster", timeout=900)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    assert len(_calls(log, "sbatch")) == 1
    assert "point 0: COMPLETED" in proc.stderr and "point 1: COMPLETED" in proc.stderr

    from nemo_runspec.artifacts.registry import ArtifactRegistry

    versions = ArtifactRegistry(tmp_path / "reg").versions("nano3-pretrain-data-tiny")
    assert sorted(v.metadata["sweep"]["values"]["num_shards"] for v in versions) == ["2", "3"]
    assert len({v.path for v in versions}) == 2


def test_a_sweep_inside_the_container_image(tmp_path, slurm_cluster, container_image):
    venv_bin = Path(sys.prefix) / "bin"
    mounts = sorted({f"{p}:{p}" for p in (Path(sys.prefix), Path(sys.base_prefix), REPO / "src", tmp_path)})
    env = cli_env(tmp_path, slurm_cluster, f"""
        container_image = "{container_image}"
        mounts = [{", ".join(f'"{m}"' for m in mounts)}]
        srun_args = ["--container-env=PATH"]
        env_vars = {{ PATH = "{venv_bin}:/usr/local/bin:/usr/bin:/bin" }}
    """.replace("\n        ", "\n"), name="box", NEMOTRON_ARTIFACTS_ROOT=str(tmp_path / "reg"))
    env_toml = Path(env["NEMOTRON_ENV_FILE"])
    text = env_toml.read_text().replace('container_image = ""\n', "", 1)  # the profile's own, not the bare one
    env_toml.write_text(text)
    _tiny_data(env, tmp_path)
    proc = _nemotron(env, tmp_path, "nano3", "pretrain", "-c", "tiny", "-m", "fallback.max_steps=2,3",
                     "--run", "box", timeout=900)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    record = json.loads(next((tmp_path / "home" / "sweeps").glob("*.json")).read_text())
    array = record["arrays"][0]
    script = Path(array["submission"]["sbatch_path"]).read_text() if array["submission"].get("sbatch_path") else ""
    assert "--container-image" in script and "#SBATCH --array=0-1" in script
    for i in (0, 1):
        assert "final loss" in Path(array["logs"][str(i)]).read_text()


def test_status_reads_every_points_loss_over_one_ssh_connection(tmp_path, ssh_target, monkeypatch):
    """`jobs status SWEEP` on a cluster reached over SSH: the last loss of each point's log
    through one connection (grep there), not one connection per point, whatever the logs' size."""
    from nemo_runspec.slurm import jobs as sj
    from nemo_runspec.slurm.ledger import Submission
    from nemo_runspec.sweep.record import ArrayRecord, SweepRecord
    from nemotron.cli.commands import jobs_sweeps

    logs = {}
    for i in range(6):
        path = tmp_path / f"point{i}.log"
        noise = "".join(f"step {s} | lm loss: {s / 1000 + i:.4E} | loss scale: 65536.0\n" for s in range(2000))
        path.write_text(noise + "x" * 300_000 + f"\nfinal loss {i}.25\n" + "teardown\n" * 50)
        logs[str(i)] = str(path)
    logs.pop("5")  # point 5 has no log yet
    sub = Submission(job_id="900", name="s", job_dir=str(tmp_path), tunnel="ssh",
                     ssh={"host": ssh_target.host, "user": ssh_target.user, "port": ssh_target.port,
                          "identity": str(ssh_target.identity)})
    rec = SweepRecord(id="t-sweep-1", created="", recipe="t", profile=None, env_file=None,
                      points=[{"index": i, "values": {}} for i in range(6)],
                      arrays=[ArrayRecord(job_id="900", indices=list(range(6)), job_dir=str(tmp_path),
                                          submitted_at="", submission=sub.to_json(), logs=logs)])
    opened = []
    real = sj.remote_for
    monkeypatch.setattr(sj, "remote_for", lambda s: opened.append(s.job_id) or real(s))
    assert jobs_sweeps.losses(rec, list(range(6))) == {0: "0.25", 1: "1.25", 2: "2.25", 3: "3.25", 4: "4.25", 5: "-"}
    assert len(opened) == 1


def test_a_run_cmd_recipe_sweeps_on_the_cluster(tmp_path, slurm_cluster):
    """run.setup/run.cmd in an array: each task writes and runs its own launch script, which
    sources the setup and reads its own point's config and dir."""
    env = cli_env(tmp_path, slurm_cluster)
    script = _recipe(tmp_path, "cmdsweep",
                     '# cmd = "python {script} --config {config} --out {job_dir}/out.txt"\n'
                     '# setup = "export GREETING=hello-from-setup"\n',
                     'import os, sys\ncfg = open(sys.argv[sys.argv.index("--config") + 1]).read()\n'
                     'out = sys.argv[sys.argv.index("--out") + 1]\n'
                     'open(out, "w").write(os.environ["GREETING"] + " " + cfg.split("x: ")[1].split()[0] + "\\n")\n')
    log = _wrapped(tmp_path, env)
    proc = _nemotron(env, tmp_path, "run", str(script), "-m", "x=11,22", "--run", "cluster", timeout=600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    assert len(_calls(log, "sbatch")) == 1
    record = json.loads(next((tmp_path / "home" / "sweeps").glob("*.json")).read_text())
    job_dir = Path(record["arrays"][0]["job_dir"])
    assert (job_dir / "points" / "0" / "out.txt").read_text() == "hello-from-setup 11\n"
    assert (job_dir / "points" / "1" / "out.txt").read_text() == "hello-from-setup 22\n"
    assert not (job_dir / "runspec_launch.sh").exists()


def test_resilience_requeues_only_the_failed_point(tmp_path, slurm_cluster):
    """[resilience] in a sweep: the point whose first attempt fails is requeued on its own
    (as ARRAY_TASK: the array's own id would requeue every task) and completes; the other
    point runs once; each keeps its attempt records in its own dir."""
    env = cli_env(tmp_path, slurm_cluster, "resilience = { max_restarts = 1, signal_before = 60 }\n")
    script = _recipe(tmp_path, "flaky", "",
                     'import os, sys\ncfg = open(sys.argv[sys.argv.index("--config") + 1]).read()\n'
                     'x = int(cfg.split("x: ")[1].split()[0])\nattempt = int(os.environ.get("SLURM_RESTART_COUNT", "0"))\n'
                     'print(f"x={x} attempt={attempt}", flush=True)\n'
                     'sys.exit(1 if x == 2 and attempt == 0 else 0)\n')
    out = _sweep_json(_nemotron(env, tmp_path, "run", str(script), "-m", "x=1,2", "--batch", "cluster"))
    array, job_dir = out["arrays"][0]["job_id"], Path(out["arrays"][0]["job_dir"])
    tasks = _wait(array, [0, 1], timeout=300)
    assert {i: s for i, (s, _) in tasks.items()} == {0: "COMPLETED", 1: "COMPLETED"}
    restarts = subprocess.run(["sacct", "-n", "-P", "-X", "-D", "-j", array, "-o", "JobID,State"],
                              capture_output=True, text=True).stdout.split()
    assert sum(line.startswith(f"{array}_0|") for line in restarts) == 1  # point 0: one attempt
    assert f"{array}_1|REQUEUED" in restarts or f"{array}_1|FAILED" in restarts
    zero = (job_dir / "points" / "0" / "resilience" / "attempts.jsonl").read_text().splitlines()
    one = [json.loads(line) for line in (job_dir / "points" / "1" / "resilience" / "attempts.jsonl").read_text()
           .splitlines()]
    assert [json.loads(line)["attempt"] for line in zero if '"start"' in line] == [0]
    assert {r["job_id"] for r in one} == {f"{array}_1"}
    assert [r["attempt"] for r in one if r["event"] == "start"] == [0, 1]
    assert not (job_dir / "resilience").exists()  # nothing shared
    status = json.loads(_nemotron(env, tmp_path, "jobs", "status", f"{out['sweep_id']}:1", "--json").stdout)
    assert [a["number"] for a in status["points"][0]["attempts"]] == [0, 1]
    table = _nemotron(env, tmp_path, "jobs", "status", out["sweep_id"]).stdout
    assert "ATTEMPTS" in table and "2: failed" in table.splitlines()[-1], table
