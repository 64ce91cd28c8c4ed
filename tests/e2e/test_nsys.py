"""`run.profile.nsys=true` on real jobs of the local cluster (no GPU and no Nsight Systems here).

- Without ``nsys`` on the nodes the job stops at its start with the one ``error:`` line in
  its log and exit code 2; the recipe never starts.
- With a stand-in ``nsys`` on the nodes' PATH (it records its arguments, runs the command
  after its options and writes the report file nsys would, its ``%p``/``%q{VAR}`` name
  expanded), the recipe runs under it with the requested steps and ranks, and
  ``nemotron report`` links the ``.nsys-rep`` the job left.

What a real ``nsys profile`` of a GPU job records is not checked anywhere (docs/reports.md).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from .helpers import cli_env

pytestmark = [pytest.mark.slurm]

NEMOTRON = Path(sys.executable).with_name("nemotron")
SCRIPT = """\
# /// script
# [tool.runspec]
# name = "e2e/nsys"
#
# [tool.runspec.run]
# launch = "direct"
# cmd = "python {script}"
# ///
import os

print("RECIPE STARTED", os.environ.get("NEMOTRON_NSYS_STEPS"), os.environ.get("NEMOTRON_NSYS_RANKS"), flush=True)
"""
#: a stand-in for `nsys profile OPTIONS COMMAND...`: what it was given, and the file nsys would write
STAND_IN = """\
#!/bin/bash
printf '%s\\n' "$@" > "$(dirname "$0")/args.txt"
[ "$1" = profile ] && shift
out=""
while [ $# -gt 0 ]; do
  case "$1" in
    -o) out="$2"; shift 2 ;;
    -s|-t) shift 2 ;;
    -*) shift ;;
    *) break ;;
  esac
done
"$@"
code=$?
out="${out//%p/$$}"
while [[ "$out" =~ %q\\{([A-Za-z_]+)\\} ]]; do
  out="${out//${BASH_REMATCH[0]}/${!BASH_REMATCH[1]}}"
done
echo "stand-in report" > "$out.nsys-rep"
exit $code
"""
ERROR = ("error: run.profile.nsys is on but nsys is not installed in the job's image "
         "(use an image with Nsight Systems, or run.profile.nsys=false)")


def _without_nsys(path: str) -> str:
    """``path`` without the directories that hold an ``nsys`` (none on this machine, normally)."""
    return os.pathsep.join(d for d in path.split(os.pathsep) if d and not os.access(os.path.join(d, "nsys"), os.X_OK))


@pytest.fixture
def home(tmp_path, slurm_cluster) -> tuple[Path, dict[str, str]]:
    """The recipe (with its config dir) and the environment of `nemotron` on the local cluster."""
    (tmp_path / "job.py").write_text(SCRIPT)
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "default.yaml").write_text("unused: 1\n")
    env = cli_env(tmp_path, slurm_cluster, f'batch_partition = "{slurm_cluster.batch_partition}"\n')
    env["PATH"] = _without_nsys(env["PATH"])
    return tmp_path, env


def _submit(root: Path, env: dict[str, str], *overrides: str) -> dict:
    proc = subprocess.run([str(NEMOTRON), "run", str(root / "job.py"), "--batch", "cluster",
                           "run.profile.nsys=true", *overrides], env=env, cwd=root, capture_output=True,
                          text=True, timeout=300, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _log(job: dict) -> str:
    logs = sorted(Path(job["job_dir"]).glob(f"log-*_{job['job_id']}_0.out"))
    assert logs, sorted(p.name for p in Path(job["job_dir"]).iterdir())
    return logs[0].read_text()


def test_a_job_without_nsys_stops_at_its_start_with_one_line_and_exit_2(home, slurm_cluster):
    root, env = home
    job = _submit(root, env)
    result = slurm_cluster.wait(job["job_id"], timeout=300)
    assert (result.state, result.exit_code) == ("FAILED", "2:0")
    log = _log(job)
    assert [line for line in log.splitlines() if line.startswith("error:")] == [ERROR]
    assert "RECIPE STARTED" not in log and "Traceback" not in log
    assert not (Path(job["job_dir"]) / "nsys").exists()  # nothing made before the check


def test_a_job_under_nsys_runs_the_recipe_and_the_report_links_its_profile(home, slurm_cluster):
    root, env = home
    stand_in = root / "nsys-bin"
    stand_in.mkdir()
    (stand_in / "nsys").write_text(STAND_IN)
    (stand_in / "nsys").chmod(0o755)
    env = {**env, "PATH": f"{stand_in}{os.pathsep}{env['PATH']}"}  # sbatch passes the caller's PATH on
    job = _submit(root, env, "run.profile.start_step=3", "run.profile.end_step=5")
    result = slurm_cluster.wait(job["job_id"], timeout=300)
    log = _log(job)
    assert (result.state, result.exit_code) == ("COMPLETED", "0:0"), log[-3000:]
    assert "RECIPE STARTED 3:5 0" in log

    args = (stand_in / "args.txt").read_text().splitlines()
    job_dir = Path(job["job_dir"])
    assert args[:6] == ["profile", "-s", "none", "-t", "nvtx,cuda", "-o"]
    assert args[6] == f"{job_dir}/nsys/profile_%p_%q{{SLURM_JOB_ID}}_node%q{{SLURM_NODEID}}_rank%q{{SLURM_PROCID}}"
    assert args[7:12] == ["--force-overwrite=true", "--capture-range=cudaProfilerApi", "--capture-range-end=stop",
                          "--cuda-graph-trace=node", "--cuda-event-trace=false"]
    assert args[12:] == ["python", str(job_dir / "code" / "main.py")], args

    written = sorted((job_dir / "nsys").glob("*.nsys-rep"))
    assert len(written) == 1 and re.fullmatch(rf"profile_\d+_{job['job_id']}_node0_rank0\.nsys-rep", written[0].name)
    report = subprocess.run([str(NEMOTRON), "report", job["job_id"], "--format", "json"], env=env, cwd=root,
                            capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)
    assert report.returncode == 0, report.stderr
    assert json.loads(report.stdout)["members"][0]["job"]["profiles"] == [str(written[0])]
    page = root / "report.html"
    html = subprocess.run([str(NEMOTRON), "report", job["job_id"], "-o", str(page)], env=env, cwd=root,
                          capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)
    assert html.returncode == 0 and "1 nsys report(s)" in html.stderr, html.stderr
    assert f'<a class="nsys" href="{written[0].as_uri()}">{written[0]}</a>' in page.read_text()


def test_stand_in_expands_names_as_nsys_does(tmp_path):
    """The stand-in itself: what the test above relies on it doing."""
    (tmp_path / "nsys").write_text(STAND_IN)
    (tmp_path / "nsys").chmod(0o755)
    proc = subprocess.run([str(tmp_path / "nsys"), "profile", "-s", "none", "-o", f"{tmp_path}/p_%p_%q{{JOBID}}_r%q{{R}}",
                           "--force-overwrite=true", "sh", "-c", "echo ran; exit 3"],
                          env={"PATH": "/usr/bin:/bin", "JOBID": "77", "R": "1"}, capture_output=True, text=True)
    assert proc.returncode == 3 and proc.stdout == "ran\n"
    assert [p.name for p in tmp_path.glob("*.nsys-rep")] and \
        re.fullmatch(r"p_\d+_77_r1\.nsys-rep", next(tmp_path.glob("*.nsys-rep")).name)
