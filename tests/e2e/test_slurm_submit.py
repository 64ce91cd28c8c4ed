"""Real submissions to the local 2-node Slurm cluster through nemo-run."""

from __future__ import annotations

import datetime as dt
import os
import sys
import time

import pytest

from nemo_runspec.errors import SubmissionError

from .helpers import Out, profile, runspec, write_script

pytestmark = [pytest.mark.slurm]


import nemo_run as run  # noqa: E402 - a required dependency: a broken install fails, never skips

from nemo_runspec.slurm import (  # noqa: E402
    Remote,
    follow,
    prepare_job,
    render_sbatch,
    sacct_info,
    submit,
)

PY = sys.executable


@pytest.fixture(autouse=True)
def _cluster(slurm_cluster):
    return slurm_cluster


def _job(tmp_path, script, *, name="e2e/job", prof=None, spec=None, args=(), exp_id=None, **kw):
    return prepare_job(env=prof or profile(), mode="batch", runspec=spec or runspec(name=name),
                       packager=run.Packager(), script=str(script), args=list(args),
                       base_dir=tmp_path / "jobs", exp_id=exp_id, **kw)


def _python(job):
    job.entrypoint = PY  # bare metal: the nodes share this machine's venv
    return job


def test_batch_submission_completes_and_log_holds_output(tmp_path):
    script = write_script(tmp_path, """
        import os
        print("MARKER", os.environ["SLURM_JOB_ID"], os.environ.get("GREETING"))
    """)
    job = _python(_job(tmp_path, script, env_vars={"GREETING": "hi there"}))
    sub = submit(job, attached=False)
    assert sub.job_id.isdigit()
    out = Out()
    assert follow(sub, out=out, poll=0.5) == 0
    log = open(sub.log_path).read()
    assert f"MARKER {sub.job_id} hi there" in log
    assert f"MARKER {sub.job_id} hi there" in out.getvalue()


@pytest.mark.parametrize(("code", "expected"), [(0, 0), (3, 3)])
def test_attached_run_streams_and_returns_exit_code(tmp_path, code, expected):
    script = write_script(tmp_path, f"""
        import sys
        for i in range(3):
            print("line", i, flush=True)
        sys.exit({code})
    """)
    job = _python(_job(tmp_path, script))
    out = Out()
    sub = submit(job, attached=True, out=out, poll=0.5)
    assert sub.exit_code == expected
    assert "line 0\nline 1\nline 2\n" in out.getvalue()
    assert sub.state == ("COMPLETED" if code == 0 else "FAILED")


@pytest.mark.parametrize("launch", ["direct", "torchrun"])
def test_dry_run_is_byte_identical_to_submitted_script(tmp_path, launch):
    script = write_script(tmp_path, "print('same')\n")
    prof = profile(startup_commands=["true"], env_vars={"A": "1 2"})
    job = _job(tmp_path, script, prof=prof, exp_id="e2e-job_bytes",
               spec=runspec(name="e2e/job", launch=launch),
               env_vars={"A": "1 2"}, secrets={"X_TOKEN": "tok_abcdef123"})
    if launch == "direct":
        job = _python(job)  # torchrun keeps "python", found first on the bare-metal PATH
    rendered = render_sbatch(job)
    assert rendered == render_sbatch(job)  # rendering twice gives the same script
    if launch == "torchrun":
        assert "--rdzv-id" in rendered
    assert not (tmp_path / "jobs").exists()
    sub = submit(job, attached=True, out=Out(), poll=0.5)
    assert sub.exit_code == 0
    written = open(sub.sbatch_path, "rb").read()
    assert written == rendered.encode()
    assert b"tok_abcdef123" not in written


def test_startup_commands_run_once_per_node(tmp_path):
    marks = tmp_path / "marks"
    marks.mkdir()
    script = write_script(tmp_path, "print('main ran')\n")
    prof = profile(nodes=2, startup_commands=[f"touch {marks}/$SLURMD_NODENAME.$$",
                                              f"echo x >> {marks}/all"])
    job = _python(_job(tmp_path, script, prof=prof))
    sub = submit(job, attached=True, out=Out(), poll=0.5)
    assert sub.exit_code == 0
    names = sorted(p.name.split(".")[0] for p in marks.iterdir() if p.name != "all")
    assert names == ["n1", "n2"]
    assert (marks / "all").read_text() == "x\nx\n"


def test_failing_startup_command_fails_the_job(tmp_path):
    script = write_script(tmp_path, "print('should not run')\n")
    job = _python(_job(tmp_path, script, prof=profile(startup_commands=["exit 7"])))
    out = Out()
    sub = submit(job, attached=True, out=out, poll=0.5)
    assert sub.exit_code != 0
    assert "should not run" not in out.getvalue()


def _ts(s: str) -> dt.datetime:
    return dt.datetime.fromisoformat(s)


def test_dependency_runs_after_first_job(tmp_path):
    first = write_script(tmp_path, "import time; time.sleep(4); print('first')\n", "a.py")
    second = write_script(tmp_path, "print('second')\n", "b.py")
    job1 = _python(_job(tmp_path, first, name="e2e/first"))
    sub1 = submit(job1, attached=False)
    job2 = _python(_job(tmp_path, second, name="e2e/second", dependencies=[sub1.job_id]))
    assert f"--dependency=afterok:{sub1.job_id}" in render_sbatch(job2)
    sub2 = submit(job2, attached=True, out=Out(), poll=0.5)
    assert sub2.exit_code == 0
    remote = Remote(job1)
    a, b = sacct_info(remote, sub1.job_id), sacct_info(remote, sub2.job_id)
    assert a["State"] == "COMPLETED" and b["State"] == "COMPLETED"
    assert _ts(b["Start"]) >= _ts(a["End"])


def test_unknown_partition_is_one_clear_error(tmp_path):
    script = write_script(tmp_path, "print('x')\n")
    job = _python(_job(tmp_path, script, prof=profile(partition="nosuchpart")))
    t0 = time.monotonic()
    with pytest.raises(SubmissionError) as err:
        submit(job, attached=False)
    msg = str(err.value)
    assert "invalid partition" in msg.lower() and "\n" not in msg
    assert "Traceback" not in msg
    assert time.monotonic() - t0 < 60
    assert not job.local_exp_dir.exists()  # nothing half-written


@pytest.mark.cluster_alone  # two-node torchrun rendezvous on port 29500 of the head host; here every node is one host
def test_torchrun_two_nodes_gloo(tmp_path):
    script = write_script(tmp_path, """
        import os
        import torch
        import torch.distributed as dist
        dist.init_process_group("gloo")
        t = torch.tensor([dist.get_rank() + 1.0])
        dist.all_reduce(t)
        print("rank", dist.get_rank(), "of", dist.get_world_size(), "sum", t.item(), flush=True)
        dist.destroy_process_group()
    """)
    os.environ.setdefault("PATH", "")
    prof = profile(nodes=2, nproc_per_node=1,
                   env_vars={"PATH": f"{os.path.dirname(PY)}:$PATH"})
    job = _job(tmp_path, script, prof=prof, spec=runspec(name="e2e/ddp", launch="torchrun"),
               env_vars={"PATH": f"{os.path.dirname(PY)}:$PATH"})
    out = Out()
    sub = submit(job, attached=True, out=out, poll=0.5)
    assert sub.exit_code == 0, open(sub.sbatch_log_path).read()[-3000:]
    text = out.getvalue()
    assert "of 2 sum 3.0" in text
