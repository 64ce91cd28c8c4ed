"""`nemotron nano3 eval`, `nemotron nano3 model eval` and `nemotron evaluate` through the real CLI."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml

from nemo_runspec.runtime.outcome import parse_line
from tests.nemotron_cli import NEMOTRON

ROOT = Path(__file__).resolve().parents[3]
WANDB_SECRET = "wandbsecret0123456789abcdefghij"
HF_SECRET = "hf_abcdefghijklmnopqrstuvwxyz012345"


def _run(env: dict, cwd: Path, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(NEMOTRON), *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout)


def _snapshot(*dirs: Path) -> dict[str, list[str]]:
    return {str(d): sorted(str(p.relative_to(d)) for p in d.rglob("*")) for d in dirs}


def _section(out: str, title: str) -> dict:
    body = out[out.index(title):].split("\n", 1)[1]
    return yaml.safe_load(body[: body.index("note:")])


@pytest.fixture()
def cluster(tmp_path: Path) -> dict:
    """An env.toml with a Slurm profile (squash_dir), [wandb], and secrets in the environment."""
    for d in ("home", "nhome", "cwd", "tmp"):
        (tmp_path / d).mkdir()
    env_toml = tmp_path / "conf" / "env.toml"
    env_toml.parent.mkdir()
    env_toml.write_text(textwrap.dedent("""\
        [dev]
        executor = "slurm"
        account = "acct"
        partition = "gpu"
        host = "login.example"
        user = "me"
        remote_job_dir = "/lustre/me/jobs"
        squash_dir = "/lustre/me/sqsh"

        [wandb]
        entity = "my-team"
        project = "nano3-evals"
        """))
    import os

    env = {k: v for k, v in os.environ.items() if not k.startswith("NEMOTRON_")}
    env.update(HOME=str(tmp_path / "home"), NEMOTRON_HOME=str(tmp_path / "nhome"), TMPDIR=str(tmp_path / "tmp"),
               COLUMNS="250", NEMORUN_HOME=str(tmp_path / "nhome" / "nemorun"), WANDB_API_KEY=WANDB_SECRET,
               HF_TOKEN=HF_SECRET)
    return {"env": env, "cwd": tmp_path / "cwd", "env_toml": env_toml,
            "watched": [tmp_path / d for d in ("home", "nhome", "cwd", "tmp")]}


def test_slurm_dry_run_shows_eval_config_images_and_no_secret(cluster):
    before = _snapshot(*cluster["watched"])
    proc = _run(cluster["env"], cluster["cwd"], "nano3", "eval", "--dry-run", "--batch", "dev",
                "--env-file", str(cluster["env_toml"]), "--task", "mmlu", "-t", "gsm8k",
                "deployment.tensor_parallel_size=8")
    assert proc.returncode == 0, proc.stderr
    assert _snapshot(*cluster["watched"]) == before  # offline: nothing written
    out = proc.stdout
    assert WANDB_SECRET not in out + proc.stderr and HF_SECRET not in out + proc.stderr
    cfg = _section(out, "Evaluation config (eval.yaml")
    assert [t["name"] for t in cfg["evaluation"]["tasks"]] == ["lm-evaluation-harness.mmlu",
                                                               "lm-evaluation-harness.gsm8k"]
    assert cfg["export"]["wandb"] == {"entity": "my-team", "project": "nano3-evals"}
    assert cfg["export"]["env_vars"] == {"WANDB_API_KEY": "host:WANDB_API_KEY"}
    assert "wandb" in cfg["execution"]["auto_export"]["destinations"]
    assert cfg["execution"]["hostname"] == "login.example" and cfg["execution"]["account"] == "acct"
    assert cfg["deployment"]["checkpoint_path"] == "${art:model,path}"
    assert cfg["deployment"]["tensor_parallel_size"] == 8
    assert not {"run", "tasks", "launcher_defaults", "publish"} & set(cfg)
    # images: the model server and the export job become .sqsh files imported first
    assert cfg["deployment"]["image"].startswith("/lustre/me/sqsh/vllm+vllm-openai")
    assert cfg["execution"]["auto_export"]["export_image"].startswith("/lustre/me/sqsh/python+3.12.7-slim")
    assert "squash script for vllm/vllm-openai:latest" in out and "enroot import" in out
    assert "benchmark lm-evaluation-harness.mmlu" in out
    # the job script: eval.py on Slurm, W&B settings exported, the key only through the secrets file
    script = out[out.index("sbatch script"):]
    assert "nano3/eval/eval.py --config /nemo_run/train.yaml" in script
    assert "export WANDB_PROJECT=nano3-evals" in script and ".nemotron-secrets.env" in script
    assert "--task" not in script  # the flags became the config's task selection
    train = yaml.safe_load(out[out.index("Train config (train.yaml"):].split("\n", 1)[1].split("Artifacts (")[0])
    assert train["tasks"] == ["mmlu", "gsm8k"]


def test_wandb_stays_off_without_a_project(cluster):
    cluster["env_toml"].write_text('[dev]\nexecutor = "slurm"\naccount = "acct"\n')
    proc = _run(cluster["env"], cluster["cwd"], "nano3", "eval", "-d", "-b", "dev",
                "--env-file", str(cluster["env_toml"]))
    assert proc.returncode == 0, proc.stderr
    cfg = _section(proc.stdout, "Evaluation config (eval.yaml")
    assert "export" not in cfg and cfg["execution"]["auto_export"]["destinations"] == []
    assert "W&B export: off" in proc.stdout
    assert "WANDB_" not in proc.stdout[proc.stdout.index("sbatch script"):].split("Evaluation config")[0]
    assert cfg["execution"]["hostname"] is None  # named as missing by the job, before anything is submitted


def test_unknown_task_is_a_one_line_usage_error(cluster):
    proc = _run(cluster["env"], cluster["cwd"], "nano3", "eval", "--dry-run", "--task", "mmlux")
    assert proc.returncode == 2
    assert proc.stderr.startswith("error: ") and "unknown task 'mmlux'" in proc.stderr
    assert "mmlu" in proc.stderr and "Traceback" not in proc.stderr
    assert _run(cluster["env"], cluster["cwd"], "nano3", "eval", "-d", "--task").returncode == 2


def test_help_imports_nothing_heavy(tmp_path):
    probe = textwrap.dedent("""
        import contextlib, io, sys
        from nemotron.cli.bin.nemotron import main
        for argv in (["--help"], ["evaluate", "--help"], ["nano3", "eval", "--help"],
                     ["nano3", "model", "eval", "-h"]):
            buf = io.StringIO()
            with contextlib.redirect_stdout(buf):
                try:
                    main(argv)
                except SystemExit:
                    pass
            assert "Usage" in buf.getvalue(), (argv, buf.getvalue())
        heavy = ("nemo_run", "ray", "wandb", "torch", "omegaconf", "pydantic", "nemo_evaluator_launcher")
        print(sorted(m for m in sys.modules if m.split(".")[0] in heavy))
    """)
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=tmp_path,
                          timeout=120, env={"PATH": "/usr/bin:/bin", "COLUMNS": "200", "HOME": str(tmp_path)})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == "[]"


def _last_line(stdout: str) -> str:
    """The job's last line before its outcome line, which must repeat it word for word
    (with the metrics as figures)."""
    *_, last, outcome_line = stdout.strip().splitlines()
    outcome = parse_line(outcome_line)
    assert outcome is not None and outcome.ok and outcome.message == last and outcome.recipe == "nano3/eval"
    assert outcome.figures.get("perplexity") is not None, outcome
    return last


def test_tiny_eval_through_the_cli_saves_and_publishes(tiny):
    cwd = tiny["root"] / "cli"
    cwd.mkdir(exist_ok=True)
    proc = _run(tiny["env"], cwd, "nano3", "eval", "-c", "tiny", f"fallback.tokenizer={tiny['tok']}")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    last = _last_line(proc.stdout)
    assert last.startswith("eval: perplexity=") and "exact_match=" in last and "model=nano3-rl-model-tiny:v1" in last
    job_dir = Path(next(line for line in proc.stderr.splitlines() if line.startswith("job dir: "))[9:])
    assert {"job.yaml", "train.yaml", "eval.yaml", "results.json"} <= {p.name for p in job_dir.iterdir()}
    results = json.loads((job_dir / "results.json").read_text())
    for key, value in results["metrics"].items():
        assert f"{key}={value:.4f}" in last or f"{key}={value:.1f}" in last
    art = tiny["registry"].resolve("nano3-eval-tiny:latest")
    assert art.path == str(job_dir / "results.json") and art.metadata["metrics"] == results["metrics"]
    # the same through the model sub-group
    again = _run(tiny["env"], cwd, "nano3", "model", "eval", "-c", "tiny", f"fallback.tokenizer={tiny['tok']}")
    assert again.returncode == 0, again.stderr[-2000:]
    assert _last_line(again.stdout) == last


def test_evaluate_a_checkpoint_path_picks_the_tiny_config(tiny):
    cwd = tiny["root"] / "cli"
    cwd.mkdir(exist_ok=True)
    proc = _run(tiny["env"], cwd, "evaluate", str(tiny["short"]), "--task", "heldout_perplexity",
                f"fallback.tokenizer={tiny['tok']}")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "using -c tiny" in proc.stderr
    last = _last_line(proc.stdout)
    assert last.startswith("eval: perplexity=") and "exact_match" not in last
    assert last.endswith(f"model={tiny['short']}")
    dry = _run(tiny["env"], cwd, "evaluate", "nano3-rl-model-tiny:latest", "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert "what the CPU fallback evaluates" in dry.stdout and "ref: nano3-rl-model-tiny:latest" in dry.stdout
    none = _run(tiny["env"], cwd, "evaluate", "--dry-run")
    assert none.returncode == 2 and "which model?" in none.stderr


def test_default_config_without_the_launcher_exits_3(tiny):
    import torch  # noqa: F401 - in the test extra: never skipped

    from nemo_runspec.evaluation.evaluator import launcher_available

    if launcher_available():
        pytest.skip("nemo-evaluator-launcher is installed here")
    cwd = tiny["root"] / "cli"
    cwd.mkdir(exist_ok=True)
    proc = _run(tiny["env"], cwd, "nano3", "eval", "run.model=nano3-rl-model-tiny:latest")
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert "nemo-evaluator-launcher is not installed here" in proc.stderr


def test_image_imports_are_submitted_first_and_the_job_waits(cluster, monkeypatch):
    """--run/--batch with squash_dir: one import job per missing image, the eval job depends on them."""
    from nemo_runspec import slurm
    from nemo_runspec.cmdline.context import GlobalContext
    from nemo_runspec.cmdline.recipe_config import recipe_config_from
    from nemo_runspec.evaluation import evaluator
    from nemo_runspec.job.compiled import compile_job
    from nemo_runspec.job.packager import packager_for
    from nemo_runspec.slurm.remote import Remote
    from nemotron.cli.commands.nano3.eval import SPEC

    for key, value in cluster["env"].items():
        monkeypatch.setenv(key, value)
    monkeypatch.chdir(cluster["cwd"])
    commands: list[str] = []

    class FakeShell:
        def run(self, cmd: str):
            commands.append(cmd)
            if cmd.startswith("test -s"):  # the export image is there already, the server's is not
                return (0, "", "") if "python+3.12.7-slim" in cmd else (1, "", "")
            return (0, "4242\n", "") if cmd.startswith("sbatch") else (0, "", "")

    monkeypatch.setattr(Remote, "for_profile", classmethod(lambda cls, values: FakeShell()))
    gctx = GlobalContext(batch="dev", env_file=str(cluster["env_toml"]),
                         overrides=["run.model=/lustre/ckpt"], passthrough=["--task", "mmlu"])
    ev = evaluator.prepare_eval_job(compile_job(SPEC, recipe_config_from(gctx, []), check_artifacts=False))
    assert [img.image for img, _ in ev.squash] == ["vllm/vllm-openai:latest", "python:3.12.7-slim"]
    assert ev.job.passthrough == ()
    waits_for = evaluator.submit_image_squashes(ev)
    assert waits_for == ["4242"]
    sbatch = [c for c in commands if c.startswith("sbatch")]
    assert len(sbatch) == 1 and "enroot import" in sbatch[0] and "docker://vllm/vllm-openai:latest" in sbatch[0]
    prepared = slurm.prepare_job(ev.job, *packager_for(ev.job), dependencies=waits_for)
    assert "afterok:4242" in slurm.render_sbatch(prepared)
    dry = evaluator.prepare_eval_job(compile_job(SPEC, recipe_config_from(
        GlobalContext(batch="dev", env_file=str(cluster["env_toml"]), dry_run=True), []), check_artifacts=False))
    commands.clear()
    assert evaluator.submit_image_squashes(dry) == [] and commands == []  # a dry run submits nothing
