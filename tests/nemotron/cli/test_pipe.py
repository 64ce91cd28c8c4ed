"""`nemotron nano3 pipe` offline: the dry run of the whole chain, stage selection, override errors.

The local chain and the Slurm chain run for real in tests/nemo_runspec/pipeline/test_chain.py
(small recipes) and tests/e2e/test_pipe.py (the tiny nano3 chain on the cluster).
"""

from __future__ import annotations

import os
import re
import subprocess
import textwrap
from pathlib import Path

import pytest

from tests.nemotron_cli import NEMOTRON

ROOT = Path(__file__).resolve().parents[3]
SECRET = "hf_pipeSECRETvalue0123456789abcdef"


@pytest.fixture()
def sandbox(tmp_path: Path) -> dict:
    nhome, cwd = tmp_path / "nhome", tmp_path / "cwd"
    cwd.mkdir()
    env_toml = tmp_path / "env.toml"
    env_toml.write_text(textwrap.dedent(f"""
        [dev]
        executor = "slurm"
        account = "acct"
        partition = "batch"
        container_image = ""
        gpus_per_node = 0
        env_vars = {{ HF_TOKEN = "{SECRET}" }}
    """))
    env = {k: v for k, v in os.environ.items() if not k.startswith("NEMOTRON_")}
    env.update(NEMOTRON_HOME=str(nhome), NEMOTRON_ENV_FILE=str(env_toml), NEMORUN_HOME=str(nhome / "nemorun"),
               NEMOTRON_ARTIFACTS_ROOT=str(tmp_path / "registry"), COLUMNS="200", TERM="dumb")
    return {"env": env, "cwd": cwd, "tmp": tmp_path, "nhome": nhome}


def nemotron(sb: dict, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(NEMOTRON), *args], cwd=sb["cwd"], env=sb["env"], text=True,
                          capture_output=True, timeout=300, stdin=subprocess.DEVNULL)


def test_slurm_dry_run_shows_every_script_and_the_graph_and_touches_nothing(sandbox):
    proc = nemotron(sandbox, "nano3", "pipe", "-c", "tiny", "--dry-run", "--batch", "dev")
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = proc.stdout
    assert len(re.findall(r"^#!/bin/bash", out, re.M)) >= 6  # one sbatch script per stage
    assert "#SBATCH --dependency='afterok:<prep-sft>:<pretrain>'" in out
    assert out.count("#SBATCH --kill-on-invalid-dep=yes") == 4  # the three trained stages and eval wait
    graph = out[out.index("dependency graph"):]
    assert "sft <- prep-sft, pretrain -> nano3-sft-model-tiny" in graph
    assert "eval <- prep-pretrain, rl, prep-rl -> nano3-eval-tiny" in graph
    assert SECRET not in out + proc.stderr
    assert not sandbox["nhome"].exists() and list(sandbox["cwd"].iterdir()) == []


def test_stage_selection_and_local_dry_run(sandbox):
    proc = nemotron(sandbox, "nano3", "pipe", "-c", "tiny", "--stages", "pretrain:sft", "--dry-run")
    assert proc.returncode == 0, proc.stderr[-2000:]
    stages = re.findall(r"stage \d/(\d): (\S+)", proc.stdout)
    assert [name for _, name in stages] == ["pretrain", "prep-sft", "sft"] and stages[0][0] == "3"
    assert "Local command" in proc.stdout


@pytest.mark.parametrize(("args", "words"), [
    (["pretrian.train.train_iters=3"], "did you mean 'pretrain'"),
    (["lr=3"], "names no stage"),
    (["--stages", "sft:evall"], "no stage 'evall'"),
    (["pretrain.train.trian_iters=3"], "stage pretrain:"),
])
def test_bad_input_is_one_line(sandbox, args, words):
    proc = nemotron(sandbox, "nano3", "pipe", "-c", "tiny", "--dry-run", *args)
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and words in lines[0], proc.stderr


# --- the sbatch launcher (one allocation) -------------------------------------------------


def test_sbatch_launcher_dry_run_shows_one_allocation_that_runs_every_stage_in_order(sandbox):
    with open(sandbox["env"]["NEMOTRON_ENV_FILE"], "a") as f:
        f.write('time = "00:20:00"\n')
    proc = nemotron(sandbox, "nano3", "pipe", "-c", "tiny", "--dry-run", "--batch", "dev", "--launcher", "sbatch")
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = proc.stdout
    driver = out[out.index("one allocation (--launcher sbatch)"):]
    stages = out[:out.index("one allocation (--launcher sbatch)")]
    # the stages are staged as they are, with no chain between them
    assert "--dependency" not in stages and "--kill-on-invalid-dep" not in stages
    # the driver: 7 stages of 20 minutes, the shared allocation lines, the stages in order
    assert "#SBATCH --time=02:20:00" in driver
    assert "#SBATCH --account=acct" in driver and "#SBATCH --nodes=1" in driver
    run_lines = re.findall(r"^run_stage (\S+) (\S+) (\S+) \|\|", driver, re.M)
    assert [name for name, _, _ in run_lines] == ["prep-pretrain", "pretrain", "prep-sft", "sft",
                                                  "prep-rl", "rl", "eval"]
    for _, script, _log in run_lines:  # each is the staged script the dry run above showed
        assert script.endswith("_sbatch.sh")
    assert SECRET not in out + proc.stderr
    assert not sandbox["nhome"].exists()


@pytest.mark.parametrize(("args", "words"), [
    (["--launcher", "sbatc", "--batch", "dev"], "did you mean 'sbatch'"),
    (["--launcher", "sbatch"], "needs a Slurm profile"),
    (["--launcher", "sbatch", "--batch", "dev", "pretrain.run.env.nodes=2"],
     "stage pretrain asks for --nodes=2 but stage prep-pretrain for --nodes=1"),
])
def test_sbatch_launcher_bad_input_is_one_line(sandbox, args, words):
    proc = nemotron(sandbox, "nano3", "pipe", "-c", "tiny", "--dry-run", *args)
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and words in lines[0], proc.stderr


# --- the evaluation stage is prepared as `nano3 eval` prepares it ---------------------------

WANDB_SECRET = "wandbPIPEsecret0123456789abcdefghij"


def _with_wandb_and_squash(sb: dict) -> None:
    with open(sb["env"]["NEMOTRON_ENV_FILE"], "a") as f:
        f.write('squash_dir = "/lustre/me/sqsh"\n\n[wandb]\nentity = "my-team"\nproject = "nano3-evals"\n')
    sb["env"]["WANDB_API_KEY"] = WANDB_SECRET


@pytest.mark.parametrize("command", [["nano3", "pipe", "--stages", "eval"], ["steps", "run", "nano3/eval"]])
def test_eval_stage_dry_run_shows_the_evaluation_config_with_wandb_and_images(sandbox, command):
    import yaml

    _with_wandb_and_squash(sandbox)
    proc = nemotron(sandbox, *command, "--dry-run", "--batch", "dev")
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = proc.stdout
    assert "Evaluation config (eval.yaml" in out
    body = out[out.index("Evaluation config (eval.yaml"):].split("\n", 1)[1]
    cfg = yaml.safe_load(body[: body.index("note:")])
    assert cfg["export"]["wandb"] == {"entity": "my-team", "project": "nano3-evals"}
    assert cfg["export"]["env_vars"] == {"WANDB_API_KEY": "host:WANDB_API_KEY"}
    assert cfg["deployment"]["image"].startswith("/lustre/me/sqsh/vllm+vllm-openai")
    assert "squash script for vllm/vllm-openai:latest" in out
    script = out[out.index("#!/bin/bash"):out.index("Evaluation config (eval.yaml")]
    assert "export WANDB_PROJECT=nano3-evals" in script and ".nemotron-secrets.env" in script
    assert WANDB_SECRET not in out + proc.stderr and SECRET not in out + proc.stderr
    assert not sandbox["nhome"].exists()


def test_eval_stage_submission_waits_for_its_image_imports(sandbox, monkeypatch):
    """Submitted as a chain, the eval stage's evaluator images are imported first (one
    Slurm job per missing .sqsh) and the stage waits for them with afterok."""
    from nemo_runspec import pipeline, slurm
    from nemo_runspec.artifacts.registry import ArtifactRegistry
    from nemo_runspec.cli_context import split_global_args
    from nemo_runspec.job.packager import packager_for
    from nemo_runspec.slurm import submission
    from nemo_runspec.slurm.prepared import SubmittedJob
    from nemo_runspec.slurm.remote import Remote
    from nemotron.chains.nano3 import STEPS

    _with_wandb_and_squash(sandbox)
    for key, value in sandbox["env"].items():
        monkeypatch.setenv(key, value)
    monkeypatch.chdir(sandbox["cwd"])
    commands: list[str] = []

    class ClusterShell:  # the cluster's answers: no .sqsh yet, sbatch gives job 4242
        def run(self, cmd: str):
            commands.append(cmd)
            return (0, "4242\n", "") if cmd.startswith("sbatch") else (1 if cmd.startswith("test -s") else 0, "", "")

    submitted: dict[str, object] = {}

    def submit_detached(prepared, **_kw):  # Slurm's sbatch for the stage itself
        submitted[prepared.name] = prepared
        return SubmittedJob(job_id="5000", job_dir=prepared.job_dir, name=prepared.name, prepared=prepared,
                            log_path="", sbatch_log_path="", sbatch_path=prepared.sbatch_path)

    monkeypatch.setattr(Remote, "for_profile", classmethod(lambda cls, values: ClusterShell()))
    monkeypatch.setattr(submission, "submit_detached", submit_detached)
    model = sandbox["tmp"] / "rl-model"
    model.mkdir()
    ArtifactRegistry(sandbox["env"]["NEMOTRON_ARTIFACTS_ROOT"]).publish("nano3-rl-model", model)
    gctx, rest = split_global_args(["--batch", "dev"])
    plans = pipeline.compile_pipeline([s for s in STEPS if s.name == "eval"], gctx, rest, resume=False)
    assert plans[0].job.job_config.run.wandb.project == "nano3-evals"  # the key reaches the job
    sub = pipeline.submit_slurm(plans, build_packager=packager_for, out=lambda _m: None)
    assert sub.job_ids == {"eval": "5000"}
    imports = [c for c in commands if c.startswith("sbatch")]
    assert len(imports) == 2 and all("enroot import" in c for c in imports)
    (prepared,) = submitted.values()
    script = slurm.render_sbatch(prepared)
    assert "afterok:4242" in script and "--kill-on-invalid-dep=yes" in script
