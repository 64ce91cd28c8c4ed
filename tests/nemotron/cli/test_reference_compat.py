"""Files written for the reference system, through the real `nemotron` CLI.

Users bring env.toml files and recipe configs written for the reference (upstream Nemotron):
each documented env.toml form goes through `nemotron env check/show` and a `--dry-run`; a
recipe config in the reference's nano3 layout (`run.env.container`, `${run.wandb.*}`,
`recipe._target_` + `per_split_data_args_path`, `/nemo_run/...` paths) goes through
`--dry-run` in every mode with the same meaning, and through a real local run on the CPU
fallback. Bad input is one line, exit 2, no traceback.
"""

from __future__ import annotations

import json
import os
import random
import re
import subprocess
import textwrap
from pathlib import Path

import pytest
import yaml

from tests.nemo_runspec.env.reference_examples import DRY_RUN_REFUSED, EXAMPLES, REFUSED, TOKEN
from tests.nemotron_cli import NEMOTRON

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture()
def sandbox(tmp_path: Path):
    """Empty HOME, NEMOTRON_HOME, cwd, TMPDIR and registry; `sbatch` on PATH only records that it ran."""
    dirs = {n: tmp_path / n for n in ("home", "nhome", "cwd", "tmp", "bin")}
    for d in dirs.values():
        d.mkdir()
    marker = tmp_path / "sbatch-ran"
    sbatch = dirs["bin"] / "sbatch"
    sbatch.write_text(f"#!/bin/sh\ntouch {marker}\necho 'sbatch: error: not in these tests' >&2\nexit 1\n")
    sbatch.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NEMOTRON_", "WANDB_"))}
    env.update(HOME=str(dirs["home"]), NEMOTRON_HOME=str(dirs["nhome"]), TMPDIR=str(dirs["tmp"]),
               COLUMNS="200", NEMORUN_HOME=str(dirs["nhome"] / "nemorun"),
               NEMOTRON_ARTIFACTS_ROOT=str(tmp_path / "registry"),
               PATH=f"{dirs['bin']}:{env.get('PATH', '')}")
    return {**dirs, "env": env, "marker": marker, "registry": tmp_path / "registry"}


def nemotron(sandbox, *args, timeout=180):
    return subprocess.run([str(NEMOTRON), *args], cwd=sandbox["cwd"], env=sandbox["env"],
                          capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)


def section(output: str, start: str, end: str | None = None) -> dict:
    body = output[output.index(start):].split("\n", 1)[1]
    ends = [body.index(m) for m in ((end,) if end else ("Artifacts (", "sbatch script", "Local command"))
            if m in body]
    return yaml.safe_load(body[: min(ends)] if ends else body)


def sbatch_lines(output: str) -> list[str]:
    return [ln.strip() for ln in output.splitlines() if ln.strip().startswith("#SBATCH")]


def one_error_line(proc) -> str:
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if ln.startswith("error:")]
    assert len(lines) == 1, proc.stderr
    return lines[0]


# --------------------------------------------------------------------------- env.toml examples


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_reference_env_example_checks_shows_and_dry_runs(sandbox, name):
    text, expected = EXAMPLES[name]
    (sandbox["cwd"] / "env.toml").write_text(textwrap.dedent(text))
    check = nemotron(sandbox, "env", "check")
    assert check.returncode == 0, check.stdout + check.stderr
    profiles = [ln.split("]")[0].removeprefix("ok [") for ln in check.stdout.splitlines() if ln.startswith("ok [")]
    assert set(expected) <= set(profiles)
    notes = {"profile table keys": ["[all] container is read as container_image",
                                    "[all] env_vars is a list"],
             "packagers": ['warning: ', '[hybrid] packager = "hybrid" names no sub-packagers']}
    for needle in notes.get(name, []):
        assert needle in check.stdout, check.stdout
    if name == "profile table keys":
        table = nemotron(sandbox, "env", "show", "all")
        assert table.returncode == 0 and "note: " in table.stdout and "container is read as" in table.stdout
        assert TOKEN not in table.stdout
    for i, profile in enumerate(p for p in profiles if p not in ("wandb", "artifacts", "cache", "cli")):
        show = nemotron(sandbox, "env", "show", profile, "--json")
        assert show.returncode == 0, show.stderr
        shown = json.loads(show.stdout)
        for key, value in expected.get(profile, {}).items():
            want = {k: ("***REDACTED***" if k == "HF_TOKEN" else v) for k, v in value.items()} \
                if isinstance(value, dict) else value
            assert shown["values"][key] == want, (profile, key)
        mode = ("--run", "--batch")[i % 2]
        dry = nemotron(sandbox, "nano3", "pretrain", "-c", "tiny", mode, profile, "--dry-run")
        if profile in DRY_RUN_REFUSED:
            lines = [ln for ln in dry.stderr.splitlines() if ln.startswith("error:")]
            assert dry.returncode != 0 and len(lines) == 1 and DRY_RUN_REFUSED[profile] in lines[0]
            assert "env.toml:" in lines[0] and "Traceback" not in dry.stderr
            continue
        assert dry.returncode == 0, dry.stderr
        job = section(dry.stdout, "Job config (job.yaml)", "Train config (train.yaml")
        values = shown["values"]
        assert job["run"]["env"]["executor"] == "slurm"
        flags = sbatch_lines(dry.stdout)
        if values.get("account"):
            assert f"#SBATCH --account={values['account']}" in flags
        else:
            assert not [f for f in flags if f.startswith(("#SBATCH --account", "#SBATCH -A"))], flags
        if "nodes" in values:
            assert f"#SBATCH --nodes={values['nodes']}" in flags
        if "container_image" in values:
            assert f"--container-image {values['container_image']}" in dry.stdout
        assert TOKEN not in dry.stdout + dry.stderr + show.stdout + check.stdout
    assert not sandbox["marker"].exists()


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_reference_forms_that_cannot_work_fail_in_one_line(sandbox, name):
    text, profile, line, says = REFUSED[name]
    (sandbox["cwd"] / "env.toml").write_text(textwrap.dedent(text).lstrip("\n"))
    for args in (("env", "check"), ("nano3", "pretrain", "-c", "tiny", "--run", profile, "-d")):
        err = one_error_line(nemotron(sandbox, *args))
        assert f"env.toml:{line}:" in err and says in err


def test_run_nodes_on_the_command_line_sets_the_job_nodes(sandbox):
    text, _ = EXAMPLES["inheritance"]
    (sandbox["cwd"] / "env.toml").write_text(textwrap.dedent(text))
    dry = nemotron(sandbox, "nano3", "pretrain", "-c", "tiny", "--run", "my-cluster", "--dry-run", "run.nodes=8")
    assert dry.returncode == 0, dry.stderr
    assert "#SBATCH --nodes=8" in sbatch_lines(dry.stdout)
    job = section(dry.stdout, "Job config (job.yaml)", "Train config (train.yaml")
    assert job["run"]["env"]["nodes"] == 8 and job["run"]["env_sources"]["nodes"] == "command line"


def test_env_vars_list_secret_stays_out_of_script_and_output(sandbox):
    (sandbox["cwd"] / "env.toml").write_text(textwrap.dedent(f"""
        [c]
        executor = "slurm"
        env_vars = ["GREETING=hello", "HF_TOKEN={TOKEN}"]
    """))
    dry = nemotron(sandbox, "kit", "preflight", "--batch", "c", "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert TOKEN not in dry.stdout + dry.stderr
    script = dry.stdout[dry.stdout.index("#!/bin/bash"):]
    assert "GREETING=hello" in script and "HF_TOKEN" not in script.replace(".nemotron-secrets.env", "")
    assert ".nemotron-secrets.env" in script  # the secret comes from the 0600 file


def test_profile_dry_run_true_is_a_dry_run(sandbox):
    (sandbox["cwd"] / "env.toml").write_text('[c]\nexecutor = "slurm"\ndry_run = true\n')
    proc = nemotron(sandbox, "kit", "preflight", "--run", "c")
    assert proc.returncode == 0, proc.stderr
    assert "Dry run" in proc.stdout and "#SBATCH" in proc.stdout
    assert "dry_run = true" in proc.stderr
    assert not sandbox["marker"].exists()
    assert not (sandbox["nhome"] / "jobs").exists() or not list((sandbox["nhome"] / "jobs").rglob("*.sh"))


def test_profile_detach_true_makes_run_a_batch(sandbox):
    (sandbox["cwd"] / "env.toml").write_text(
        '[c]\nexecutor = "slurm"\npartition = "p"\nbatch_partition = "back"\ndetach = true\n')
    proc = nemotron(sandbox, "kit", "preflight", "--run", "c", "-d")
    assert proc.returncode == 0, proc.stderr
    job = section(proc.stdout, "Job config (job.yaml)", "Train config (train.yaml")
    assert job["run"]["mode"] == "batch"
    assert "#SBATCH --partition=back" in sbatch_lines(proc.stdout)
    assert "detach = true" in proc.stderr


# --------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(("body", "needle", "says"), [
    ('env_vars = ["A=1", "NOEQUALS"]', "env_vars", "NAME=value"),
    ('executor = "docker"', "executor", 'executor = "docker" requires container_image'),
    ('packager = "pattern"', "packager", 'packager = "pattern" requires packager_include_pattern'),
])
def test_bad_reference_forms_are_one_line_errors(sandbox, body, needle, says):
    path = sandbox["cwd"] / "env.toml"
    path.write_text(f'[c]\ndescription = "x"\n{body}\n')
    for args in (("env", "check"), ("env", "show", "c"), ("nano3", "pretrain", "-c", "tiny", "--run", "c", "-d")):
        line = one_error_line(nemotron(sandbox, *args))
        assert line.startswith(f"error: {path}:3:") or line.startswith("error: env.toml:3:"), line
        assert says in line


def test_the_upstream_cli_option_form_is_refused_with_the_override_to_use(sandbox):
    line = one_error_line(nemotron(sandbox, "nano3", "pretrain", "-c", "tiny", "-d", "--run.nodes", "8"))
    assert "'--run.nodes'" in line and "run.nodes=VALUE" in line


def test_run_typo_is_one_line_with_did_you_mean(sandbox):
    line = one_error_line(nemotron(sandbox, "nano3", "pretrain", "-c", "tiny", "-d", "run.nodez=8"))
    assert "run.nodez" in line and "did you mean 'run.nodes'?" in line


# --------------------------------------------------------------------------- upstream recipe config

UPSTREAM_TINY = """
# Written the way the reference's nano3 pretrain configs are.
run:
  data: nano3-pretrain-data-tiny:latest
  env:
    container: nvcr.io/nvidia/nemo:25.11.nemotron_3_nano

recipe:
  _target_: megatron.bridge.recipes.qwen.qwen3.qwen3_8b_pretrain_config
  per_split_data_args_path: ${art:data,path}/blend.json

train:
  train_iters: 1700
  global_batch_size: 32

scheduler:
  lr_warmup_iters: 32

model:
  hidden_size: 64   # no meaning here: a warning, not a crash

logger:
  log_interval: 10
  wandb_project: ${run.wandb.project}   # from env.toml [wandb]
  wandb_entity: ${run.wandb.entity}

checkpoint:
  save: /nemo_run/nano3-pretrain-model-tiny
  save_interval: 20
"""

ENV_WITH_WANDB = """
[wandb]
project = "ref-project"
entity = "ref-team"

[cluster]
executor = "slurm"
account = "acct"
partition = "gpu"
gpus_per_node = 0
"""


def test_upstream_config_dry_runs_with_the_same_meaning_in_every_mode(sandbox):
    (sandbox["cwd"] / "upstream.yaml").write_text(UPSTREAM_TINY)
    (sandbox["cwd"] / "env.toml").write_text(ENV_WITH_WANDB)
    seen = {}
    for mode in ((), ("--run", "cluster"), ("--batch", "cluster")):
        proc = nemotron(sandbox, "nano3", "pretrain", "-c", "upstream.yaml", "--dry-run", *mode)
        assert proc.returncode == 0, proc.stderr
        assert "Traceback" not in proc.stderr
        job = section(proc.stdout, "Job config (job.yaml)", "Train config (train.yaml")
        train = section(proc.stdout, "Train config (train.yaml")
        assert job["run"]["env"]["container_image"] == "nvcr.io/nvidia/nemo:25.11.nemotron_3_nano"
        assert job["run"]["wandb"]["project"] == "ref-project" and job["run"]["wandb"]["entity"] == "ref-team"
        assert train["logger"]["wandb_project"] == "${run.wandb.project}"  # resolved by the script
        # the section shows the train.yaml that is written: with the run.wandb it resolves against
        assert train["run"]["wandb"]["project"] == "ref-project"
        assert train["run"]["env"]["container_image"] == "nvcr.io/nvidia/nemo:25.11.nemotron_3_nano"
        assert train["recipe"]["per_split_data_args_path"] == "${art:data,path}/blend.json"
        seen[mode[:1] or ("local",)] = {k: v for k, v in train.items() if k != "run"}
        if mode:
            assert "--container-image nvcr.io/nvidia/nemo:25.11.nemotron_3_nano" in proc.stdout
    first, *rest = seen.values()
    assert all(other == first for other in rest)


def test_run_env_container_interpolation_resolves_in_train_yaml(sandbox):
    """``${run.env.container}`` (the reference's name) is read as ``${run.env.container_image}``:
    the train.yaml the script reads resolves it."""
    from omegaconf import OmegaConf

    (sandbox["cwd"] / "upstream.yaml").write_text(UPSTREAM_TINY.replace(
        "  log_interval: 10\n", "  log_interval: 10\n  wandb_exp_name: img-${run.env.container}\n"))
    proc = nemotron(sandbox, "nano3", "pretrain", "-c", "upstream.yaml", "--dry-run")
    assert proc.returncode == 0, proc.stderr
    train = OmegaConf.create(section(proc.stdout, "Train config (train.yaml"))
    assert train.logger._get_node("wandb_exp_name")._value() == "img-${run.env.container_image}"
    assert OmegaConf.select(train, "logger.wandb_exp_name") == "img-nvcr.io/nvidia/nemo:25.11.nemotron_3_nano"


UPSTREAM_EVAL = """
# Written the way the reference's nano3 eval config is.
defaults:
  - default
run:
  env:
    container: nvcr.io/nvidia/nemo:25.11.nemotron_3_nano
deployment:
  image: ${run.env.container}
export:
  wandb:
    project: ${run.wandb.project}
    entity: ${run.wandb.entity}
"""


def test_upstream_eval_config_dry_runs_with_its_image_and_wandb(sandbox):
    (sandbox["cwd"] / "upeval.yaml").write_text(UPSTREAM_EVAL)
    (sandbox["cwd"] / "env.toml").write_text(ENV_WITH_WANDB.replace('partition = "gpu"', 'partition = "gpu"\n'
                                                                    'host = "login"\nuser = "me"\n'
                                                                    'remote_job_dir = "/j"'))
    proc = nemotron(sandbox, "nano3", "eval", "-c", "upeval.yaml", "--dry-run", "--batch", "cluster")
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    job = section(proc.stdout, "Job config (job.yaml)", "Train config (train.yaml")
    assert job["run"]["wandb"]["project"] == "ref-project" and job["run"]["wandb"]["entity"] == "ref-team"
    assert job["deployment"]["image"] == "${run.env.container_image}"
    evaluation = section(proc.stdout, "Evaluation config (eval.yaml", "note:")
    assert evaluation["deployment"]["image"] == "nvcr.io/nvidia/nemo:25.11.nemotron_3_nano"
    assert evaluation["export"]["wandb"] == {"project": "ref-project", "entity": "ref-team"}


def _tiny_pretrain_data(registry: Path, work: Path) -> None:
    """A real (tiny) pretrain data-prep output, published as the tiny config's data artifact."""
    from nemo_runspec.artifacts.registry import ArtifactRegistry
    from nemotron.data_prep.pretrain import run_pretrain
    from nemotron.data_prep.tokenizer import train_tokenizer

    rng = random.Random(7)
    words = "alpha beta gamma delta river stone cloud paper light north".split()
    texts = [" ".join(rng.choice(words) for _ in range(rng.randint(5, 30))) + "." for _ in range(300)]
    tok = train_tokenizer(texts, work / "tok", vocab_size=300)
    (work / "pt.jsonl").write_text("".join(json.dumps({"text": t}) + "\n" for t in texts))
    run_pretrain({"tokenizer": {"path": str(tok)}, "num_shards": 2, "workers": 0,
                  "input": {"paths": [str(work / "pt.jsonl")]}, "output_dir": str(work / "pt"),
                  "split": "90,10,0"})
    ArtifactRegistry(registry).publish("nano3-pretrain-data-tiny", work / "pt")


def test_upstream_config_real_local_run_on_the_cpu_fallback(sandbox, tmp_path):
    import torch  # noqa: F401 - in the test extra: never skipped
    _tiny_pretrain_data(sandbox["registry"], tmp_path)
    (sandbox["cwd"] / "upstream.yaml").write_text(UPSTREAM_TINY)
    (sandbox["cwd"] / "env.toml").write_text(ENV_WITH_WANDB)
    proc = nemotron(sandbox, "nano3", "pretrain", "-c", "upstream.yaml",
                    "+fallback.max_steps=3", "+fallback.log_interval=1", timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert re.search(r"final loss [\d.]+ \| steps 3 ", proc.stdout), proc.stdout[-2000:]
    warnings = [ln for ln in proc.stderr.splitlines() if ln.startswith("warning:")]
    assert any("'model.hidden_size' means nothing to nano3/pretrain" in w for w in warnings), proc.stderr
    assert not any("'recipe.per_split_data_args_path'" in w or "'logger." in w for w in warnings)
    # /nemo_run/... is the job dir (no /nemo_run here), as nemo-run's mount makes it in a container
    ckpts = list((sandbox["nhome"] / "jobs").rglob("nano3-pretrain-model-tiny/step_*.pt"))
    assert ckpts, sorted(str(p) for p in (sandbox["nhome"] / "jobs").rglob("*"))[:50]
    assert not Path("/nemo_run/nano3-pretrain-model-tiny").exists()
    # the train.yaml the script read: ${run.wandb.project} resolves to env.toml's [wandb] project
    from omegaconf import OmegaConf

    train = OmegaConf.load(ckpts[0].parent.parent / "train.yaml")
    assert OmegaConf.select(train, "logger.wandb_project") == "ref-project"
    assert OmegaConf.select(train, "logger.wandb_entity") == "ref-team"
    assert train.run.env.container_image == "nvcr.io/nvidia/nemo:25.11.nemotron_3_nano"


# The reference's two nano3 SFT layouts: FinetuningDatasetConfig with explicit packed
# paths from the data artifact (its tiny.yaml), and nano3_packed_sft_dir (its default.yaml).
UPSTREAM_SFT = {
    "explicit": """
run:
  data: nano3-sft-data-tiny:latest
  env:
    container: nvcr.io/nvidia/nemo:25.11.nemotron_3_nano
recipe:
  _target_: megatron.bridge.recipes.qwen.qwen3.qwen3_8b_finetune_config
  packed_sequence: true
dataset:
  _target_: megatron.bridge.training.config.FinetuningDatasetConfig
  dataset_root: ${art:data,path}
  seq_length: ${art:data,pack_size}
  packed_sequence_specs:
    _target_: megatron.bridge.data.datasets.packed_sequence.PackedSequenceSpecs
    packed_sequence_size: ${art:data,pack_size}
    packed_train_data_path: ${art:data,training_path}
    packed_val_data_path: ${art:data,validation_path}
    packed_metadata_path: ${art:data,metadata_path}
train:
  train_iters: 1700
checkpoint:
  save: /nemo_run/sft
  save_interval: 20
""",
    "packed_dir": """
run:
  data: nano3-sft-data-tiny:latest
recipe:
  _target_: megatron.bridge.recipes.nemotronh.nemotron_3_nano.nemotron_3_nano_finetune_config
dataset:
  nano3_packed_sft_dir: ${art:data,path}
  seq_length: ${art:data,pack_size}
train:
  train_iters: 1700
checkpoint:
  save: /nemo_run/sft
""",
}


@pytest.mark.parametrize("layout", list(UPSTREAM_SFT))
def test_upstream_sft_config_runs_on_the_cpu_fallback(sandbox, layout):
    import torch  # noqa: F401 - in the test extra: never skipped

    prep = nemotron(sandbox, "nano3", "data", "prep", "sft", "-c", "tiny", timeout=300)
    assert prep.returncode == 0, prep.stderr[-2000:]
    (sandbox["cwd"] / "upstream_sft.yaml").write_text(UPSTREAM_SFT[layout])
    for mode in ((), ("--batch", "cluster")):
        (sandbox["cwd"] / "env.toml").write_text(ENV_WITH_WANDB)
        dry = nemotron(sandbox, "nano3", "sft", "-c", "upstream_sft.yaml", "--dry-run", *mode)
        assert dry.returncode == 0, dry.stderr[-2000:]
        assert "Traceback" not in dry.stderr
    proc = nemotron(sandbox, "nano3", "sft", "-c", "upstream_sft.yaml", "+fallback.max_steps=2",
                    "+fallback.log_interval=1", "+fallback.eval_interval=0", timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert re.search(r"final loss [\d.]+ \| steps 2 ", proc.stdout), proc.stdout[-2000:]
    warnings = [ln for ln in proc.stderr.splitlines() if ln.startswith("warning:")]
    assert not any("'dataset." in w for w in warnings), warnings  # read, not ignored
    if layout == "explicit":
        assert any("'recipe.packed_sequence'" in w for w in warnings), warnings  # no meaning here: named


def test_upstream_data_prep_config_is_one_line_naming_what_to_write(sandbox):
    (sandbox["cwd"] / "updp.yaml").write_text(
        "blend_path: config/data_blend_raw.json\noutput_dir: output/nano3/stage0_pretrain\n"
        "num_shards: 128\ntokenizer_model: nvidia/NVIDIA-Nemotron-Nano-9B-v2\nadd_bos: false\nadd_eos: true\n")
    line = one_error_line(nemotron(sandbox, "nano3", "data", "prep", "pretrain", "-c", "updp.yaml", "--dry-run"))
    assert "updp.yaml:1:" in line and "'blend_path'" in line and "reference's data-prep config" in line
    assert "blend_path -> input.paths" in line and "tokenizer_model -> tokenizer.path" in line
    assert "missing key 'input'" not in line
