"""``setup`` and ``run.cmd`` of a runspec: parsed and checked, then used by local runs
(for real, in a subprocess) and by the Slurm/Ray batch scripts (rendered offline;
tests/e2e/test_runspec_setup.py runs them on the cluster)."""

from __future__ import annotations

import os
import shlex
import textwrap
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from nemo_runspec import parse, parse_text
from nemo_runspec.errors import RunspecError
from nemo_runspec.execution.local import execute_local, local_preview

HOSTILE = ["a b", "$(touch PWNED)", "`touch PWNED`", "x; touch PWNED", "'q'\"", "-c", "{script}", "\n", "*"]


def block(*lines: str) -> str:
    body = "\n".join(f"# {ln}" if ln else "#" for arg in lines for ln in arg.split("\n"))
    return f"# /// script\n{body}\n# ///\nimport sys\n"


def script(tmp_path: Path, *runspec_lines: str, body: str = "") -> Path:
    """A recipe whose runspec has ``runspec_lines``; a ``setup = ...`` line among them is
    written under ``[tool.runspec.run]`` (commands are run.setup; top-level setup only describes)."""
    setup = [ln for ln in runspec_lines if ln.startswith("setup = ")]
    lines = [ln for ln in runspec_lines if not ln.startswith("setup = ")]
    if setup:
        if "[tool.runspec.run]" not in lines:
            lines.append("[tool.runspec.run]")
        at = lines.index("[tool.runspec.run]") + 1
        lines[at:at] = setup
    path = tmp_path / "job.py"
    path.write_text(block("[tool.runspec]", 'name = "t/job"', *lines) + textwrap.dedent(body))
    return path


# ----------------------------------------------------------------------------- the template


# ----------------------------------------------------------------------------- local runs

PROBE = """
    import json, os, sys
    print("PROBE " + json.dumps({"argv": sys.argv[1:], "setup": os.environ.get("FROM_SETUP"),
                                  "cwd": os.getcwd(), "exe": sys.executable}))
"""


def _job_config(tmp_path):
    return OmegaConf.create({"x": 1, "run": {"env": {}}})


def _run_local(tmp_path, spec, passthrough=(), capfd=None):
    code = execute_local(spec, _job_config(tmp_path), passthrough=list(passthrough), job_dir=tmp_path / "jobdir")
    return code


def _probe(capfd):
    import json

    out = capfd.readouterr().out
    lines = [ln for ln in out.splitlines() if ln.startswith("PROBE ")]
    assert len(lines) == 1, out
    return json.loads(lines[0][6:])


def test_local_setup_runs_once_in_the_recipes_shell_then_cmd(tmp_path, capfd, monkeypatch):
    monkeypatch.setenv("NEMOTRON_HOME", str(tmp_path / "home"))
    count = tmp_path / "setup-count"
    path = script(tmp_path, f'setup = "echo run >> {count}; export FROM_SETUP=yes-$((40+2))"', "",
                  "[tool.runspec.run]", 'launch = "direct"',
                  'cmd = "python {script} --config {config} --job {job_dir} {args}"', body=PROBE)
    spec = parse(path)
    assert _run_local(tmp_path, spec, ["two words", "$(touch PWNED)"]) == 0
    probe = _probe(capfd)
    job_dir = str(tmp_path / "jobdir")
    assert probe["argv"] == ["--config", f"{job_dir}/train.yaml", "--job", job_dir, "two words", "$(touch PWNED)"]
    assert probe["setup"] == "yes-42"  # exported by setup, seen by the recipe
    assert count.read_text() == "run\n"  # once
    assert os.path.samefile(Path(probe["exe"]).parent, Path(os.sys.executable).parent)  # `python` = this venv
    assert not (tmp_path / "jobdir" / "PWNED").exists() and not Path("PWNED").exists()
    assert (tmp_path / "jobdir" / "runspec_launch.sh").is_file()  # what ran stays in the job dir


def test_local_failing_setup_stops_before_the_recipe(tmp_path, capfd, monkeypatch):
    monkeypatch.setenv("NEMOTRON_HOME", str(tmp_path / "home"))
    path = script(tmp_path, 'setup = """\ntrue\nfalse\necho never\n"""', body=PROBE)
    code = _run_local(tmp_path, parse(path))
    out = capfd.readouterr()
    assert code == 1
    assert "PROBE" not in out.out and "never" not in out.out
    assert "nemotron: runspec setup failed with exit code 1" in out.err


def test_local_workdir_applies_to_setup_and_command(tmp_path, capfd, monkeypatch):
    monkeypatch.setenv("NEMOTRON_HOME", str(tmp_path / "home"))
    work = tmp_path / "work dir"
    work.mkdir()
    path = script(tmp_path, 'setup = "touch made-by-setup"', "[tool.runspec.run]", 'launch = "direct"',
                  f'workdir = "{work}"', body=PROBE)
    assert _run_local(tmp_path, parse(path)) == 0
    assert _probe(capfd)["cwd"] == str(work) and (work / "made-by-setup").exists()


def test_local_torchrun_with_cmd_runs_cmd_in_each_worker(tmp_path, capfd, monkeypatch):
    import torch  # noqa: F401 - in the test extra: never skipped

    monkeypatch.setenv("NEMOTRON_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    # one os.write per worker: two workers share stdout (unbuffered), and print() writes piecewise
    path = script(tmp_path, 'setup = "export FROM_SETUP=1"', "[tool.runspec.run]", 'launch = "torchrun"',
                  'cmd = "python {script} --config {config} --rank $RANK"',
                  body='import os, sys\nos.write(1, f"WORKER {os.environ[\'RANK\']} {sys.argv[-1]} '
                       '{os.environ[\'FROM_SETUP\']}\\n".encode())\n')
    cfg = OmegaConf.create({"run": {"env": {"local_nproc": 2}}})
    assert execute_local(parse(path), cfg, job_dir=tmp_path / "jobdir") == 0
    out = capfd.readouterr().out
    workers = sorted(ln.split("WORKER ", 1)[1].strip() for ln in out.splitlines() if "WORKER " in ln)
    assert workers == ["0 0 1", "1 1 1"]  # RANK, the --rank the shell expanded, the setup's export


def test_without_setup_or_cmd_nothing_changes(tmp_path):
    spec = parse(script(tmp_path, "[tool.runspec.run]", 'launch = "direct"'))
    preview = local_preview(spec, _job_config(tmp_path))
    assert preview.endswith(f"{shlex.quote(str(spec.script_path))} --config <job dir>/train.yaml")
    assert "runspec_launch.sh" not in preview


def test_local_preview_shows_the_launch_script(tmp_path):
    spec = parse(script(tmp_path, 'setup = "echo hi"', "[tool.runspec.run]", 'launch = "direct"',
                        'cmd = "uv run python {script} --config {config}"'))
    preview = local_preview(spec, _job_config(tmp_path))
    assert "# <job dir>/runspec_setup.sh\n" in preview and "echo hi" in preview
    assert f"exec uv run python {shlex.quote(str(spec.script_path))} --config '<job dir>/train.yaml'" in preview


# ----------------------------------------------------------------------------- Slurm and Ray scripts


def test_top_level_setup_is_a_description_never_run(tmp_path, capfd, monkeypatch):
    """The reference's recipes write prose there ("NeMo ... pre-installed in the image.");
    running it would fail every such recipe, and backquotes in it would execute."""
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "job.py"
    path.write_text(block("[tool.runspec]", 'name = "t/job"',
                          'setup = "Everything is in the image; `touch PWNED` is prose."',
                          "[tool.runspec.run]", 'launch = "direct"') + textwrap.dedent(PROBE))
    monkeypatch.setenv("NEMOTRON_HOME", str(tmp_path / "home"))
    spec = parse(path)
    assert spec.setup.startswith("Everything is in the image") and spec.run.setup == ()
    assert _run_local(tmp_path, spec, []) == 0
    assert _probe(capfd)["argv"][0] == "--config"  # the recipe ran, started as without setup
    assert not (tmp_path / "jobdir" / "runspec_setup.sh").exists()
    assert not list(tmp_path.rglob("PWNED"))


def test_top_level_setup_as_a_list_says_where_commands_go(tmp_path):
    text = block("[tool.runspec]", 'name = "t/x"', 'setup = ["pip install x"]')
    with pytest.raises(RunspecError) as ei:
        parse_text(text, path="x.py")
    assert "[tool.runspec.run] setup = [...]" in str(ei.value) and "x.py:4:" in str(ei.value)


def test_run_setup_as_a_list_is_one_line_per_command(tmp_path):
    spec = parse(script(tmp_path, "[tool.runspec.run]", 'setup = ["export A=1", "export B=2"]'))
    assert spec.run.setup == ("export A=1", "export B=2") and spec.run.setup_script == "export A=1\nexport B=2"


@pytest.mark.parametrize("value", ['[]', '""', '[1]', '["ok", ""]', '7'])
def test_bad_run_setup_is_one_line(tmp_path, value):
    text = block("[tool.runspec]", 'name = "t/x"', "[tool.runspec.run]", f"setup = {value}")
    with pytest.raises(RunspecError) as ei:
        parse_text(text, path="x.py")
    assert "run.setup" in str(ei.value) and "\n" not in str(ei.value)
