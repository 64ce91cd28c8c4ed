"""`nemotron nano3 pipe` on the local two-node Slurm cluster: the tiny chain as one afterok chain.

The real console script, its own NEMOTRON_HOME, env.toml and artifact registry
(a shared path both nodes see). Checked: every stage submitted at once and run
in order, each consuming what the previous one published; a rerun submits
nothing; a failing middle stage stops the stages after it (under --run with its
exit code; under --batch Slurm cancels them) and a rerun resumes; `nemotron jobs`
lists, shows and cancels a real chain.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from nemo_runspec.artifacts.registry import ArtifactRegistry
from tests.nemotron_cli import NEMOTRON

from .helpers import cli_env

pytestmark = [pytest.mark.slurm]

PREP_RECIPE = "nano3/data/prep/pretrain"
STAGES = ["prep-pretrain", "pretrain", "prep-sft", "sft", "prep-rl", "rl", "eval"]
#: every stage of the chain: -c tiny skips convert (SFT and RL hand each other fallback-pt as it is)
ALL_STAGES = ["prep-pretrain", "pretrain", "prep-sft", "sft", "convert", "prep-rl", "rl", "eval"]


@pytest.fixture(scope="module")
def home(tmp_path_factory, slurm_cluster) -> dict:
    tmp = tmp_path_factory.mktemp("pipe")
    env = cli_env(tmp, slurm_cluster, f'batch_partition = "{slurm_cluster.batch_partition}"\nnodes = 1\n',
                  time="00:10:00")
    return {"env": env, "tmp": tmp, "registry": Path(env["NEMOTRON_ARTIFACTS_ROOT"])}


def nemotron(home: dict, *args: str, timeout: float = 900) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(NEMOTRON), *args], env=home["env"], cwd=home["tmp"], text=True,
                          capture_output=True, timeout=timeout, stdin=subprocess.DEVNULL)


def job_ids(output: str) -> dict[str, str]:
    line = re.search(r"^pipe (\S+): (.*)$", output, re.M)
    assert line, output[-3000:]
    return dict(pair.split("=") for pair in line.group(2).split(", ") if pair)


def sacct_times(job_id: str) -> tuple[str, str]:
    out = subprocess.run(["sacct", "-n", "-X", "-P", "-j", job_id, "-o", "Start,End"],
                         capture_output=True, text=True).stdout.split("\n")[0]
    start, end = out.split("|")
    return start, end


def test_tiny_chain_batch_runs_in_order_then_a_rerun_submits_nothing(home, slurm_cluster):
    proc = nemotron(home, "nano3", "pipe", "-c", "tiny", "--batch", "cluster")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    ids = job_ids(proc.stderr)
    assert list(ids) == STAGES
    pipe_id = re.search(r"^pipe (\S+):", proc.stderr, re.M).group(1)
    assert f"nemotron jobs logs -f {pipe_id}" in proc.stderr
    chain = json.loads(proc.stdout)  # --batch: stdout is the chain's one JSON line
    assert chain["pipe_id"] == pipe_id and {s["stage"]: s["job_id"] for s in chain["stages"] if s["job_id"]} == ids
    assert [s["stage"] for s in chain["stages"]] == ALL_STAGES
    assert "formats already match" in next(s["skipped"] for s in chain["stages"] if s["stage"] == "convert")
    # the one command that follows the chain: every stage's log, live, in order
    follow = nemotron(home, "jobs", "logs", "-f", pipe_id)
    assert follow.returncode == 0, follow.stderr[-3000:]
    headers = re.findall(r"^== (\S+) \(job (\d+)\)", follow.stderr, re.M)
    assert headers == [(s, ids[s]) for s in STAGES], follow.stderr[-3000:]
    assert re.search(r"^eval: .*perplexity=", follow.stdout, re.M)
    results = {stage: slurm_cluster.wait(ids[stage], timeout=600) for stage in STAGES}
    assert {s: r.state for s, r in results.items()} == dict.fromkeys(STAGES, "COMPLETED")

    # each consumer started after its producers ended (afterok), and read what they published
    for consumer, producers in {"pretrain": ["prep-pretrain"], "sft": ["prep-sft", "pretrain"],
                                "rl": ["prep-rl", "sft"], "eval": ["rl", "prep-pretrain", "prep-rl"]}.items():
        for producer in producers:
            assert sacct_times(ids[consumer])[0] >= sacct_times(ids[producer])[1]
    reg = ArtifactRegistry(home["registry"])
    for name in ("nano3-pretrain-data-tiny", "nano3-pretrain-model-tiny", "nano3-sft-data-tiny",
                 "nano3-sft-model-tiny", "nano3-rl-data-tiny", "nano3-rl-model-tiny", "nano3-eval-tiny"):
        assert reg.resolve(f"{name}:latest").metadata["pipe_id"] == pipe_id, name
    record = json.loads((Path(home["env"]["NEMOTRON_HOME"]) / "pipes" / f"{pipe_id}.json").read_text())
    by_name = {s["name"]: s for s in record["stages"]}
    assert {n: s["job_id"] for n, s in by_name.items() if s.get("job_id")} == ids
    sft_log = Path(by_name["sft"]["log"]).read_text()
    assert "final loss" in sft_log
    # the chain ends in a number: the eval stage's summary line, and its published metrics
    eval_log = Path(by_name["eval"]["log"]).read_text()
    assert re.search(r"^eval: .*perplexity=\d", eval_log, re.M), eval_log[-2000:]
    assert reg.resolve("nano3-eval-tiny:latest").metadata["model"].startswith("nano3-rl-model-tiny:v")

    again = nemotron(home, "nano3", "pipe", "-c", "tiny", "--batch", "cluster")
    assert again.returncode == 0, again.stderr[-3000:]
    assert "nothing to submit" in again.stderr
    assert [s["job_id"] for s in json.loads(again.stdout)["stages"]] == [None] * len(ALL_STAGES)
    assert again.stderr.count("skipped:") == len(ALL_STAGES)


# A stage that fails with a code of its own: without its fallback and with no usable
# NeMo-RL here, rl exits 3 ("backend not installed"), a code neither the pipe command's own
# errors (1, 2) nor a crashed stage (1) give. rl is a Ray stage, whose driver's code is the
# job's; a torchrun stage (pretrain, sft) ends with torchrun's own 1 whatever its worker gave.
FAILING_RL = ("rl.fallback.enabled=false",)
STAGE_EXIT = 3


#: overrides that make a training stage end at once, before training (its native backend is
#: not installed on the cluster and the CPU fallback is switched off): exit code 3. Under
#: torchrun (pretrain) that becomes torchrun's own 1; a Ray stage (rl) keeps the driver's 3.
def no_backend(stage: str) -> tuple[str, str]:
    return (f"+{stage}.backend=native", f"{stage}.fallback.enabled=false")


@pytest.fixture()
def fresh(tmp_path, slurm_cluster) -> dict:
    """A home with its own empty registry: the test relies on no earlier test."""
    env = cli_env(tmp_path, slurm_cluster, f'batch_partition = "{slurm_cluster.batch_partition}"\nnodes = 1\n',
                  time="00:10:00")
    return {"env": env, "tmp": tmp_path, "registry": Path(env["NEMOTRON_ARTIFACTS_ROOT"]), "jobs": []}


@pytest.fixture(autouse=True)
def _cancel_leftovers(request):
    yield
    box = request.node.funcargs.get("fresh") or request.node.funcargs.get("home")
    if box and box.get("jobs"):
        subprocess.run(["scancel", *box["jobs"]], capture_output=True)


def pipe_id_of(output: str) -> str:
    return re.search(r"^pipe (\S+):", output, re.M).group(1)


def test_failing_middle_stage_under_run_exits_with_its_code_and_cancels_its_dependants(fresh, slurm_cluster):
    # inputs from outside the chain: placeholders are enough, rl ends before reading them
    reg = ArtifactRegistry(fresh["registry"])
    for name in ("nano3-sft-model-tiny", "nano3-rl-data-tiny", "nano3-pretrain-data-tiny"):
        (fresh["tmp"] / name).mkdir()
        reg.publish(name, fresh["tmp"] / name)
    proc = nemotron(fresh, "nano3", "pipe", "-c", "tiny", "--run", "cluster", "--stages", "rl,eval", *no_backend("rl"))
    ids = job_ids(proc.stderr)
    fresh["jobs"] += ids.values()
    assert list(ids) == ["rl", "eval"]
    assert proc.returncode == 3, proc.stdout[-3000:] + proc.stderr[-3000:]
    failed = slurm_cluster.wait(ids["rl"])
    assert (failed.state, failed.exit_code) == ("FAILED", "3:0")
    assert slurm_cluster.wait(ids["eval"]).state == "CANCELLED"
    assert "stage rl failed (exit 3)" in proc.stderr, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr


def test_failing_middle_stage_under_batch_cancels_dependants_then_a_rerun_resumes(fresh, slurm_cluster):
    """No client follows: Slurm itself cancels the stage after the failed one
    (--kill-on-invalid-dep); `jobs status PIPE` says so; the rerun skips what exists."""
    stages = ["prep-pretrain", "pretrain", "prep-sft", "sft"]
    proc = nemotron(fresh, "nano3", "pipe", "-c", "tiny", "--batch", "cluster", "--stages", "prep-pretrain:sft",
                    *no_backend("pretrain"))
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    ids = job_ids(proc.stderr)
    fresh["jobs"] += ids.values()
    assert list(ids) == stages
    pipe_id = pipe_id_of(proc.stderr)
    sft = slurm_cluster.wait(ids["sft"], timeout=300)
    assert sft.state == "CANCELLED", sft
    results = {s: slurm_cluster.wait(ids[s], timeout=300) for s in stages}
    assert {s: r.state for s, r in results.items()} == {"prep-pretrain": "COMPLETED", "pretrain": "FAILED",
                                                        "prep-sft": "COMPLETED", "sft": "CANCELLED"}
    assert results["pretrain"].exit_code == "1:0"  # torchrun's code for a failed worker

    status = nemotron(fresh, "jobs", "status", pipe_id)
    assert status.returncode == 0, status.stderr
    row = {ln.split()[0]: ln for ln in status.stdout.splitlines()[2:] if ln.strip()}
    assert "FAILED" in row["pretrain"] and " 1 " in row["pretrain"]
    assert "CANCELLED" in row["sft"] and "pretrain FAILED" in row["sft"], status.stdout
    data = json.loads(nemotron(fresh, "jobs", "status", pipe_id, "--json").stdout)
    by_name = {s["name"]: s for s in data["stages"]}
    assert by_name["sft"]["state"] == "CANCELLED" and "pretrain FAILED" in by_name["sft"]["reason"]
    assert by_name["pretrain"]["exit_code"] == 1

    # the rerun (without the fault): the data preps are skipped, pretrain and sft run and complete
    again = nemotron(fresh, "nano3", "pipe", "-c", "tiny", "--batch", "cluster", "--stages", "prep-pretrain:sft")
    assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-3000:]
    rerun = job_ids(again.stderr)
    fresh["jobs"] += rerun.values()
    assert list(rerun) == ["pretrain", "sft"]
    assert re.search(r"prep-pretrain: skipped", again.stderr) and re.search(r"prep-sft: skipped", again.stderr)
    follow = nemotron(fresh, "jobs", "logs", "-f", pipe_id_of(again.stderr))
    assert follow.returncode == 0, follow.stderr[-3000:]
    assert {s: slurm_cluster.wait(rerun[s]).state for s in rerun} == {"pretrain": "COMPLETED", "sft": "COMPLETED"}
    reg = ArtifactRegistry(fresh["registry"])
    assert reg.resolve("nano3-sft-model-tiny:latest").metadata["pipe_id"] == pipe_id_of(again.stderr)


def test_jobs_list_status_and_cancel_on_a_real_held_chain(fresh, slurm_cluster):
    """A real two-stage chain whose first stage is held for an hour: `jobs list --recipe nano3`
    shows both stages in their pipe, `jobs status PIPE --json` why each waits, `jobs cancel
    PIPE` cancels both."""
    proc = nemotron(fresh, "nano3", "pipe", "-c", "tiny", "--batch", "cluster", "--stages", "prep-pretrain:pretrain",
                    "prep-pretrain.run.env.sbatch_options={begin: now+1hour}")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    ids = job_ids(proc.stderr)
    fresh["jobs"] += ids.values()
    pipe_id = pipe_id_of(proc.stderr)

    listed = nemotron(fresh, "jobs", "list", "--recipe", "nano3")
    assert listed.returncode == 0, listed.stderr
    rows = {ln.split()[0]: ln.split() for ln in listed.stdout.splitlines()[1:] if ln.strip()}
    assert rows[ids["prep-pretrain"]][1:3] == ["PENDING", PREP_RECIPE], listed.stdout
    assert rows[ids["pretrain"]][1:3] == ["PENDING", "nano3/pretrain"], listed.stdout
    assert rows[ids["prep-pretrain"]][-1] == f"{pipe_id}:prep-pretrain"
    assert rows[ids["pretrain"]][-1] == f"{pipe_id}:pretrain"

    data = json.loads(nemotron(fresh, "jobs", "status", pipe_id, "--json").stdout)
    states = {s["name"]: (s["job_id"], s["state"], s["reason"]) for s in data["stages"]}
    assert states == {"prep-pretrain": (ids["prep-pretrain"], "PENDING", "BeginTime"),
                      "pretrain": (ids["pretrain"], "PENDING", "Dependency")}

    cancel = nemotron(fresh, "jobs", "cancel", pipe_id)
    assert cancel.returncode == 0, cancel.stderr
    for stage in ("prep-pretrain", "pretrain"):
        assert f"cancelled job {ids[stage]} (was PENDING)" in cancel.stdout, cancel.stdout
        assert slurm_cluster.wait(ids[stage]).state == "CANCELLED"


def test_a_rejected_stage_cancels_the_stages_already_queued(home, slurm_cluster):
    """Slurm refuses the second stage (no such partition): the first, already queued,
    is cancelled, so nothing of a half-submitted chain is left behind."""
    proc = nemotron(home, "nano3", "pipe", "-c", "tiny", "--batch", "cluster", "--no-resume",
                    "--stages", "prep-pretrain:pretrain", "pretrain.run.env.batch_partition=nosuchpart")
    assert proc.returncode == 1, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr
    errors = [ln for ln in proc.stderr.splitlines() if ln.startswith("error:")]
    assert len(errors) == 1 and "invalid partition" in errors[0].lower(), proc.stderr[-2000:]
    first = re.search(r"prep-pretrain: job (\d+)", proc.stderr).group(1)
    assert f"[pipe] cancelled {first}" in proc.stderr
    assert slurm_cluster.wait(first).state.startswith("CANCELLED")


def test_sbatch_launcher_runs_the_stages_in_one_allocation(home, slurm_cluster):
    proc = nemotron(home, "nano3", "pipe", "-c", "tiny", "--batch", "cluster", "--launcher", "sbatch",
                    "--no-resume", "--stages", "prep-pretrain:pretrain")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    ids = job_ids(proc.stderr)
    assert list(ids) == ["prep-pretrain", "pretrain"] and len(set(ids.values())) == 1
    job_id = ids["pretrain"]
    pipe_id = re.search(r"^pipe (\S+):", proc.stderr, re.M).group(1)
    assert json.loads(proc.stdout)["pipe_id"] == pipe_id
    follow = nemotron(home, "jobs", "logs", "-f", pipe_id)
    assert follow.returncode == 0, follow.stderr[-3000:]
    assert re.findall(r"^== (\S+) \(job (\d+)\)", follow.stderr, re.M) == [("prep-pretrain", job_id),
                                                                           ("pretrain", job_id)]
    assert "[ray] cluster ready" in follow.stdout and "final loss" in follow.stdout, follow.stdout[-2000:]
    assert slurm_cluster.wait(job_id).state == "COMPLETED"
    record = json.loads((Path(home["env"]["NEMOTRON_HOME"]) / "pipes" / f"{pipe_id}.json").read_text())
    assert record["launcher"] == "sbatch"
    driver_log = Path(record["driver_log"]).read_text()
    assert driver_log.index("[pipe] prep-pretrain: ended") < driver_log.index("[pipe] pretrain: started"), driver_log
    reg = ArtifactRegistry(home["registry"])
    assert reg.resolve("nano3-pretrain-model-tiny:latest").metadata["pipe_id"] == pipe_id


def test_sbatch_launcher_stops_at_a_failing_stage(home, slurm_cluster):
    proc = nemotron(home, "nano3", "pipe", "-c", "tiny", "--run", "cluster", "--launcher", "sbatch",
                    "--no-resume", "--stages", "prep-rl:eval", *FAILING_RL)
    assert proc.returncode == STAGE_EXIT, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr
    assert "stage rl failed" in proc.stderr, proc.stderr[-2000:]
    job_id = job_ids(proc.stderr)["rl"]
    result = slurm_cluster.wait(job_id)  # the allocation ends with the failing stage's code
    assert (result.state, result.exit_code) == ("FAILED", f"{STAGE_EXIT}:0")
    pipe_id = re.search(r"^pipe (\S+):", proc.stderr, re.M).group(1)
    run_dir = Path(json.loads((Path(home["env"]["NEMOTRON_HOME"]) / "pipes" / f"{pipe_id}.json").read_text())["run_dir"])
    assert (run_dir / "prep-rl.rc").read_text().strip() == "0"
    assert (run_dir / "rl.rc").read_text().strip() == str(STAGE_EXIT)
    assert not (run_dir / "eval.rc").exists()
