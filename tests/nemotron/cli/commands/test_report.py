"""`nemotron report`: its bad inputs, where it writes, --open, and what it imports."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.import_probes import imported_after

NEMOTRON = Path(sys.executable).with_name("nemotron")


def _run(tmp_path: Path, *args: str, **env: str | None) -> subprocess.CompletedProcess[str]:
    """``nemotron ARGS`` with its own NEMOTRON_HOME; ``env`` added (None: removed)."""
    base = {k: v for k, v in os.environ.items() if not k.startswith("NEMOTRON_")}
    base.update(NEMOTRON_HOME=str(tmp_path / "home"), COLUMNS="200")
    for key, value in env.items():
        if value is None:
            base.pop(key, None)
        else:
            base[key] = value
    return subprocess.run([str(NEMOTRON), *args], env=base, capture_output=True, text=True, timeout=120,
                          cwd=tmp_path, stdin=subprocess.DEVNULL)


def _local_job_dir(tmp_path: Path) -> Path:
    """A local run's job dir as the launcher and the trainer leave it (job.yaml, progress.jsonl)."""
    job = tmp_path / "home" / "jobs" / "nano3-pretrain" / "20250601-100000-1a2b3c4d"
    job.mkdir(parents=True)
    (job / "job.yaml").write_text("run:\n  cli:\n    argv: [nano3, pretrain, -c, tiny]\n    config: tiny\n"
                                  "  recipe:\n    name: nano3/pretrain\n")
    lines = [(100.0, "[pretrain] step 5/10 | loss 7.5000 | lr 1.00e-03 | 900 tok/s"),
             (101.0, "[pretrain] step 10/10 | loss 7.0000 | lr 1.00e-04 | 1,100 tok/s"),
             (101.5, "[pretrain] final loss 7.2500 | steps 10 | tokens 640 | 1.5 s")]
    (job / "progress.jsonl").write_text("".join(json.dumps({"t": t, "attempt": 0, "line": x}) + "\n"
                                                for t, x in lines))
    return job


def test_unknown_reference_is_one_line_exit_2(tmp_path):
    proc = _run(tmp_path, "report", "168")
    assert proc.returncode == 2
    assert proc.stderr.startswith("error: no job or pipe '168'") and proc.stderr.count("\n") == 1
    assert proc.stdout == ""


def test_unknown_format_suggests_and_open_needs_html(tmp_path):
    job = _local_job_dir(tmp_path)
    proc = _run(tmp_path, "report", str(job), "--format", "jsno")
    assert proc.returncode == 2 and "unknown --format 'jsno'" in proc.stderr and "json" in proc.stderr
    proc = _run(tmp_path, "report", str(job), "--format", "json", "--open")
    assert proc.returncode == 2 and proc.stderr.startswith("error: --open shows the HTML page")


def test_default_path_is_under_nemotron_home_and_summary_on_stderr(tmp_path):
    job = _local_job_dir(tmp_path)
    proc = _run(tmp_path, "report", str(job))
    assert proc.returncode == 0, proc.stderr
    page = tmp_path / "home" / "reports" / "job-20250601-100000-1a2b3c4d.html"
    assert proc.stdout == f"{page}\n"
    assert page.read_text().startswith("<!DOCTYPE html>")
    assert "job 20250601-100000-1a2b3c4d (nano3/pretrain): COMPLETED, 1 attempt, step 10, loss 7.0000, " \
           "1,000 tok/s" in proc.stderr


def test_nsys_reports_in_the_job_dir_are_linked(tmp_path):
    job = _local_job_dir(tmp_path)
    (job / "nsys").mkdir()
    rep = job / "nsys" / "profile_123_4242_node0_rank0.nsys-rep"
    rep.write_bytes(b"not really")
    proc = _run(tmp_path, "report", str(job), "-o", str(tmp_path / "r.html"))
    assert proc.returncode == 0, proc.stderr
    assert f'<a class="nsys" href="{rep.as_uri()}">{rep}</a>' in (tmp_path / "r.html").read_text()
    assert "1 nsys report(s)" in proc.stderr
    data = json.loads(_run(tmp_path, "report", str(job), "--format", "json").stdout)
    assert data["members"][0]["job"]["profiles"] == [str(rep)]


def test_open_without_a_browser_warns_and_still_writes(tmp_path):
    job = _local_job_dir(tmp_path)
    # no display and no BROWSER: Python's webbrowser finds none here (Debian's chromium is an X browser)
    proc = _run(tmp_path, "report", str(job), "--open", "-o", str(tmp_path / "r.html"),
                BROWSER=None, DISPLAY=None, WAYLAND_DISPLAY=None)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "r.html").is_file()
    assert f"warning: no browser found here; open {tmp_path / 'r.html'}" in proc.stderr


def test_open_uses_the_browser_the_user_set(tmp_path):
    job = _local_job_dir(tmp_path)
    opened = tmp_path / "opened.txt"
    fake = tmp_path / "fake-browser"
    fake.write_text(f"#!/bin/sh\necho \"$1\" > {opened}\n")
    fake.chmod(0o755)
    proc = _run(tmp_path, "report", str(job), "--open", "-o", str(tmp_path / "r.html"), BROWSER=str(fake))
    assert proc.returncode == 0, proc.stderr
    assert opened.read_text().strip() == (tmp_path / "r.html").as_uri()


def test_unwritable_output_is_one_line_naming_it(tmp_path):
    job = _local_job_dir(tmp_path)
    (tmp_path / "file").write_text("x")
    proc = _run(tmp_path, "report", str(job), "-o", str(tmp_path / "file" / "r.html"))
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith("error: ") and str(tmp_path / "file") in proc.stderr
    assert "Traceback" not in proc.stderr


def _imported(argv: list[str], modules: tuple[str, ...]) -> list[str]:
    """Which of ``modules`` ``nemotron ARGV`` imported (a fresh interpreter)."""
    code = (f"import sys\nsys.argv = ['nemotron', *{argv!r}]\nfrom nemotron.cli.bin.nemotron import main\n"
            "try:\n    main()\nexcept SystemExit:\n    pass")
    last = imported_after(code, modules).stdout.split("\n")[-2]  # the probe's line, after the help
    return [m for m in last.split(",") if m]


def test_root_help_and_report_help_import_no_plotting():
    heavy = ("bokeh", "playwright", "nemo_runspec.report", "nemo_runspec.report.build", "nemo_runspec.report.page")
    assert _imported(["--help"], heavy) == []
    assert _imported(["report", "--help"], heavy) == []


def _without_bokeh(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``nemotron ARGS`` in an interpreter where ``import bokeh`` fails, as when it is not installed
    (a ``--no-deps`` install, a trimmed environment)."""
    code = ("import sys\nsys.modules['bokeh'] = None\nsys.argv = ['nemotron', *sys.argv[1:]]\n"
            "from nemotron.cli.bin.nemotron import main\nmain()\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("NEMOTRON_")}
    env.update(NEMOTRON_HOME=str(tmp_path / "home"), COLUMNS="200")
    return subprocess.run([sys.executable, "-c", code, *args], env=env, capture_output=True, text=True,
                          timeout=120, cwd=tmp_path, stdin=subprocess.DEVNULL)


def test_without_bokeh_the_page_is_one_line_naming_what_to_install_and_json_still_works(tmp_path):
    job = _local_job_dir(tmp_path)
    page = tmp_path / "r.html"
    proc = _without_bokeh(tmp_path, "report", str(job), "-o", str(page))
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr == ("error: the HTML report needs Bokeh, which is not installed in this environment "
                           "(pip install 'bokeh<4,>=3.6', a dependency of nemotron; or --format json, "
                           "which needs no Bokeh)\n")
    assert proc.stdout == "" and not page.exists()
    proc = _without_bokeh(tmp_path, "report", str(job), "--format", "json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["members"][0]["job"]["state"] == "COMPLETED"


def test_consumed_latest_is_the_version_latest_was_when_the_job_started(tmp_path):
    import time

    from nemo_runspec.artifacts.registry import ArtifactRegistry

    reg = ArtifactRegistry(tmp_path / "reg")
    (tmp_path / "d1").mkdir()
    (tmp_path / "d2").mkdir()
    reg.publish("tiny-data", str(tmp_path / "d1"))
    started = time.time() + 1.0
    job = _local_job_dir(tmp_path)
    (job / "job.yaml").write_text("run:\n  data: tiny-data:latest\n  cli:\n    argv: [nano3, pretrain]\n"
                                  "data:\n  data_path: ${art:data,path}\n")
    (job / "progress.jsonl").write_text(json.dumps({"t": started, "attempt": 0, "line": "[pretrain] step 1/1 | "
                                                    "loss 1.0000 | lr 1.00e-03 | 9 tok/s"}) + "\n")
    time.sleep(max(0.0, started + 2.5 - time.time()))
    reg.publish("tiny-data", str(tmp_path / "d2"))  # latest moved after the job started
    proc = _run(tmp_path, "report", str(job), "--format", "json", NEMOTRON_ARTIFACTS_ROOT=str(tmp_path / "reg"))
    assert proc.returncode == 0, proc.stderr
    consumed = json.loads(proc.stdout)["members"][0]["job"]["identity"]["consumed"]
    assert consumed == [{"ref": "tiny-data:latest = tiny-data:v1 (latest when the job started)", "key": "data",
                         "path": str(tmp_path / "d1")}]
