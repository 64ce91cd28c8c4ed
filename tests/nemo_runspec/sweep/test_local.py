"""A sweep's points run on this machine (sweep/local.py), one after another or in parallel:
a real recipe script per point, each in its own job dir with its sweep in its environment, a
failing point not stopping the others, and the first failing point's exit code."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nemo_runspec import parse
from nemo_runspec.config.sweep import Point
from nemo_runspec.job.compiled import compile_job
from nemo_runspec.job.run_config import RunConfig
from nemo_runspec.sweep.local import point_env, run_points

SCRIPT = """\
# /// script
# [tool.runspec]
# name = "team/point"
# [tool.runspec.run]
# launch = "direct"
# [tool.runspec.resources]
# nodes = 1
# gpus_per_node = 0
# ///
import json, os, sys
from pathlib import Path
path = Path(sys.argv[sys.argv.index("--config") + 1])
code = int(path.read_text().split("code:")[1].split()[0])
(path.parent / "out.json").write_text(json.dumps({"index": os.environ["NEMOTRON_SWEEP_INDEX"],
                                                  "values": json.loads(os.environ["NEMOTRON_SWEEP_VALUES"])}))
print("point ran")
sys.exit(code)
"""


@pytest.fixture
def compile_point(tmp_path, monkeypatch):
    (tmp_path / "r" / "config").mkdir(parents=True)
    (tmp_path / "r" / "config" / "default.yaml").write_text("code: 0\n")
    (tmp_path / "r" / "point.py").write_text(SCRIPT)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("NEMOTRON_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("NEMOTRON_ENV_FILE", raising=False)
    spec = parse(tmp_path / "r" / "point.py")
    return lambda point: compile_job(spec, RunConfig(overrides=list(point.overrides)))


POINTS = [Point(i, (f"code={c}",), {"code": str(c)}) for i, c in enumerate((0, 3, 0, 5))]


@pytest.mark.parametrize("parallel", [None, 2])
def test_every_point_runs_in_its_own_job_dir_and_the_first_failure_is_the_exit_code(
        compile_point, tmp_path, parallel, capfd):
    done = []
    code = run_points(compile_point, "sw1", POINTS, parallel=parallel, log_dir=tmp_path / "logs",
                      on_done=lambda p, c, job_dir, log: done.append((p.index, c, log)))
    assert code == 3
    assert sorted((i, c) for i, c, _ in done) == [(0, 0), (1, 3), (2, 0), (3, 5)]
    outs = sorted((tmp_path / "home").rglob("out.json"))
    assert len(outs) == 4 and len({o.parent for o in outs}) == 4
    assert sorted(json.loads(o.read_text())["index"] for o in outs) == ["0", "1", "2", "3"]
    err = capfd.readouterr().err
    assert "[sweep sw1] point 1 failed (exit 3)" in err and "[sweep sw1] point 0 completed" in err
    if parallel:
        logs = {i: log for i, _, log in done}
        # each child's output goes to its log (what it holds under pytest's capture is pytest's)
        assert sorted(logs) == [0, 1, 2, 3] and all(Path(log).is_file() for log in logs.values())


def test_a_point_is_told_its_sweep():
    env = point_env("sw1", POINTS[1])
    assert env["NEMOTRON_SWEEP_ID"] == "sw1" and env["NEMOTRON_SWEEP_INDEX"] == "1"
    assert json.loads(env["NEMOTRON_SWEEP_VALUES"])["overrides"] == ["code=3"]
