"""Jobs inside a container image through pyxis + enroot, on both nodes of the test cluster.

The test image is a Debian rootfs with python3 (no registry here). The
project's Python environment is mounted into it at the same paths, as a site
would mount a shared software tree; what runs is the packaged code in the
job dir, mounted by nemo-run at /nemo_run.
"""

from __future__ import annotations

import hashlib
import os
import re
import secrets as pysecrets
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from .helpers import Out, runspec, write_script

pytestmark = [pytest.mark.slurm]

import nemo_run as run  # noqa: E402 - a required dependency: a broken install fails, never skips

from nemo_runspec.slurm import prepare_job, render_sbatch, submit  # noqa: E402
from tests.nemotron_cli import NEMOTRON  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
MARKER = "/etc/pyxis-test-image"  # exists only inside the test image


def _python_mounts() -> list[str]:
    """This interpreter, its venv and the editable source, at the same paths inside."""
    paths = {Path(sys.prefix), Path(sys.base_prefix), REPO / "src"}
    return [f"{p}:{p}" for p in sorted(paths)]


def _container_profile(image: str, **over) -> dict:
    venv_bin = Path(sys.prefix) / "bin"
    return {
        "executor": "slurm", "account": "testacct", "partition": "debug", "container_image": image,
        "gpus_per_node": 0, "time": "00:10:00", "mounts": _python_mounts(),
        # The image sets its own PATH; --container-env keeps the job's.
        "env_vars": {"PATH": f"{venv_bin}:/usr/local/bin:/usr/bin:/bin"},
        "srun_args": ["--container-env=PATH"],
    } | over


def _toml_list(items) -> str:
    return "[" + ", ".join(f'"{i}"' for i in items) + "]"


def _cli_env(tmp_path: Path, image: str, *, extra_mounts: list[str], env_vars: dict[str, str],
             extra: str = "", **env_over: str) -> dict[str, str]:
    """An env.toml with a two-node container profile [ctr] (this Python mounted in),
    and the environment that makes `nemotron` use it with a home under tmp_path."""
    prof = _container_profile(image)
    variables = ", ".join(f'{k} = "{v}"' for k, v in {**prof["env_vars"], **env_vars}.items())
    env_toml = tmp_path / "env.toml"
    env_toml.write_text(textwrap.dedent(f"""
        [ctr]
        executor = "slurm"
        account = "testacct"
        partition = "debug"
        container_image = "{image}"
        gpus_per_node = 0
        nodes = 2
        time = "00:10:00"
        mounts = {_toml_list(prof["mounts"] + extra_mounts)}
        srun_args = ["--container-env=PATH"]
        env_vars = {{ {variables} }}
    """) + textwrap.dedent(extra))
    nhome = tmp_path / "nhome"
    env = {k: v for k, v in os.environ.items() if not k.startswith("NEMOTRON_")}
    env.update(NEMOTRON_HOME=str(nhome), NEMOTRON_ENV_FILE=str(env_toml), NEMORUN_HOME=str(nhome / "nemorun"),
               COLUMNS="250", TERM="dumb", **env_over)
    return env


@pytest.mark.cluster_alone  # two-node torchrun rendezvous on port 29500 of the head host; here every node is one host
def test_preflight_on_two_nodes_inside_the_container(tmp_path, slurm_cluster, container_image):
    inside = tmp_path / "shared"
    inside.mkdir()
    token = "hf_" + pysecrets.token_hex(16)
    env = _cli_env(tmp_path, container_image, extra_mounts=[f"{inside}:/inside-only"],
                   env_vars={"HF_TOKEN": token})
    nhome = tmp_path / "nhome"
    proc = subprocess.run([str(NEMOTRON), "kit", "preflight", "--run", "ctr"], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-3000:]
    assert "preflight passed: 2 rank(s) on 2 node(s)" in out
    # /inside-only exists only in the container (a mount's container side), and both
    # ranks found it writable; HF_TOKEN reached both ranks (env 1/1)
    rows = re.findall(r"^\[default0\]:(\d)\s+(n\d)\s+\S+\s+\d+\s+\S+\s+\S+\s+(\d+)/(\d+)\s+(\d)/(\d)\s+OK", out, re.M)
    assert sorted(r[1] for r in rows) == ["n1", "n2"], out[-2000:]
    assert all(r[2] == r[3] and r[4] == r[5] == "1" for r in rows)
    assert token not in out
    leaks = [str(p) for p in nhome.rglob("*") if p.is_file() and token.encode() in p.read_bytes()]
    assert leaks == []
    job_id = re.search(r"Submitted Slurm job (\d+)", out).group(1)
    saved = list(slurm_cluster.state_dir.glob(f"**/job.{job_id}/environment"))
    for f in saved:
        assert token.encode() not in f.read_bytes()
    # how it ended (docs/execution.md, "How a job ends"): the verdict, the state, the log; the
    # two nodes' torchruns met in a static rendezvous, so not even the log holds teardown noise
    summary = proc.stderr[proc.stderr.rindex(f"job {job_id}: running on"):].splitlines()[1:]
    log = Path(summary[-1].split(None, 1)[1])
    assert summary == ["preflight passed: 2 rank(s) on 2 node(s), backend gloo",
                       f"job {job_id}: COMPLETED (exit code 0)", f"  log:       {log}"]
    for line in [*summary, *proc.stdout.splitlines(), *log.read_text().splitlines()]:
        assert not line.startswith("+ ") and "[nemotron: " not in line, line
        for needle in ("frame #", "[c10d]", "Exception raised from", "failed to shutdown the rendezvous"):
            assert needle not in line, line


def test_container_job_sees_image_mounts_code_and_secret_and_script_is_exact(tmp_path, container_image):
    secret = "tok_" + pysecrets.token_hex(12)
    data = tmp_path / "data"
    data.mkdir()
    (data / "hello.txt").write_text("from the host\n")
    script = write_script(tmp_path, f"""
        import hashlib, os
        print("MARKER", open("{MARKER}").read().strip(), flush=True)
        print("MOUNT", open("/data/hello.txt").read().strip(), flush=True)
        print("CWD", os.getcwd(), flush=True)
        print("SECRET", hashlib.sha256(os.environ["MY_TOKEN"].encode()).hexdigest(), flush=True)
    """)
    # the script itself is not packaged here (no-op packager): mount its dir
    prof = _container_profile(container_image,
                              mounts=_python_mounts() + [f"{data}:/data", f"{tmp_path}:{tmp_path}"])
    job = prepare_job(env=prof, mode="run", runspec=runspec(name="e2e/ctr", launch="direct"),
                      packager=run.Packager(), script=str(script), base_dir=tmp_path / "jobs",
                      exp_id="e2e-ctr_exact", secrets={"MY_TOKEN": secret})
    job.entrypoint = "python3"
    rendered = render_sbatch(job)
    assert f"--container-image {container_image}" in rendered or f"--container-image={container_image}" in rendered
    assert secret not in rendered
    out = Out()
    sub = submit(job, attached=True, out=out, poll=0.5)
    text = out.getvalue()
    assert sub.exit_code == 0, text
    assert "MARKER pyxis-enroot test image" in text
    assert "MOUNT from the host" in text
    assert "CWD /nemo_run/code" in text
    assert f"SECRET {hashlib.sha256(secret.encode()).hexdigest()}" in text
    assert Path(sub.sbatch_path).read_text() == rendered  # dry run == what was submitted
    leaks = [str(p) for p in (tmp_path / "jobs").rglob("*") if p.is_file() and secret.encode() in p.read_bytes()]
    assert leaks == []


def test_ray_data_prep_across_both_nodes_inside_the_container(tmp_path, container_image):
    """Raylets, the probe and the driver each run in their own container step; the
    job's data dir and registry are mounted, so the artifact is visible here after."""
    registry = tmp_path / "registry"
    env = _cli_env(tmp_path, container_image, extra_mounts=[f"{tmp_path}:{tmp_path}"],
                   env_vars={"NEMOTRON_PYTHON": str(Path(sys.prefix) / "bin" / "python")},
                   extra="""
                       cpus_per_task = 1
                       ray_timeout = 240
                   """, NEMOTRON_ARTIFACTS_ROOT=str(registry))
    proc = subprocess.run([str(NEMOTRON), "nano3", "data", "prep", "pretrain", "-c", "tiny", "--run", "ctr"],
                          env=env, cwd=tmp_path, capture_output=True, text=True, timeout=900,
                          stdin=subprocess.DEVNULL)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-3000:]
    assert "[ray] 2/2 node(s) up" in out
    assert "published nano3-pretrain-data-tiny:v1" in out

    from nemo_runspec.artifacts.registry import ArtifactRegistry

    art = ArtifactRegistry(registry).resolve("nano3-pretrain-data-tiny:latest")
    assert (Path(art.path) / "blend.json").is_file()
    assert not list(Path("/tmp").glob("nemotron-ray-*")) or all(
        not p.name.endswith(re.search(r"Submitted Slurm job (\d+)", out).group(1))
        for p in Path("/tmp").glob("nemotron-ray-*"))  # the job's shared Ray dir is removed
