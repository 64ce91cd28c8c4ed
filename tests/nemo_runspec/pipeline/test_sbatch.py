"""The sbatch launcher's parts (nemo_runspec.pipeline.sbatch), offline.

The driver script is run for real with bash on staged scripts written here;
``squeue``/``scancel`` are small scripts on PATH that list one leftover job
step and record what is cancelled (the real ones run in tests/e2e/test_pipe.py).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from nemo_runspec.errors import ConfigError
from nemo_runspec.pipeline.sbatch import (
    allocation_options,
    render_driver,
    sbatch_options,
    slurm_seconds,
    slurm_time,
)

HEAD = "#!/bin/bash\n#SBATCH --account=a\n#SBATCH --nodes={nodes}\n#SBATCH --job-name={name}\n" \
       "#SBATCH --output=/x/{name}_%j.out\n{time}#SBATCH --exclusive\necho hi\n"


def script(name: str, nodes: int = 1, time: str | None = "00:10:00") -> str:
    return HEAD.format(nodes=nodes, name=name, time=f"#SBATCH --time={time}\n" if time else "")


def test_sbatch_options_reads_both_spellings_and_skips_other_comments():
    text = "#!/bin/bash\n#SBATCH --nodes=2\n#SBATCH -p batch\n# SBATCH --not-this=1\n#SBATCH --exclusive\nx=1\n"
    assert sbatch_options(text) == [("nodes", "2"), ("p", "batch"), ("exclusive", "")]


@pytest.mark.parametrize(("text", "seconds"), [
    ("30", 1800), ("30:15", 1815), ("01:02:03", 3723), ("2-03", 2 * 86400 + 3 * 3600),
    ("2-03:04", 2 * 86400 + 3 * 3600 + 240), ("1-00:00:05", 86405),
])
def test_slurm_time_formats(text, seconds):
    assert slurm_seconds(text) == seconds


@pytest.mark.parametrize("bad", ["", "1h", "1:2:3:4", "-5", "UNLIMITED"])
def test_a_bad_time_is_a_config_error(bad):
    with pytest.raises(ConfigError, match="not a Slurm time limit"):
        slurm_seconds(bad)


@given(st.integers(min_value=60, max_value=400 * 86400))
def test_slurm_time_round_trips(seconds):
    assert slurm_seconds(slurm_time(seconds)) == seconds


def test_allocation_is_shared_and_times_add_up():
    options, time_limit = allocation_options({"a": script("a"), "b": script("b", time="1-00:00:00")})
    assert options == [("account", "a"), ("nodes", "1"), ("exclusive", "")]
    assert time_limit == "1-00:10:00"
    # a stage without a limit: the allocation has none either (the partition's default)
    assert allocation_options({"a": script("a"), "b": script("b", time=None)})[1] is None


def test_a_stage_asking_for_another_allocation_is_named():
    with pytest.raises(ConfigError) as err:
        allocation_options({"prep": script("prep"), "train": script("train", nodes=4)})
    assert "stage train asks for --nodes=4 but stage prep for --nodes=1" in str(err.value)
    other = script("train").replace("#SBATCH --exclusive\n", "")
    with pytest.raises(ConfigError, match="stage train asks for no --exclusive but stage prep for --exclusive="):
        allocation_options({"prep": script("prep"), "train": other})


# --- the driver, run with bash ----------------------------------------------------------------


@pytest.fixture
def slurm_shims(tmp_path: Path) -> dict:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    cancelled = tmp_path / "cancelled.txt"
    (bin_dir / "squeue").write_text("#!/bin/sh\necho 77.batch\necho 77.extern\necho 77.3\n")
    (bin_dir / "scancel").write_text(f"#!/bin/sh\necho \"$@\" >> {cancelled}\n")
    for f in bin_dir.iterdir():
        f.chmod(0o755)
    env = dict(os.environ, PATH=f"{bin_dir}:{os.environ['PATH']}", SLURM_JOB_ID="77")
    return {"env": env, "cancelled": cancelled}


def make_stages(tmp_path: Path, codes: dict[str, int]) -> list[tuple[str, str, str]]:
    stages = []
    for name, code in codes.items():
        path = tmp_path / "stages" / f"{name} stage's.sh"  # a space and a quote in the path
        path.parent.mkdir(exist_ok=True)
        path.write_text(f"echo {name} ran in $SLURM_JOB_ID\necho {name} >> {tmp_path / 'order.txt'}\nexit {code}\n")
        stages.append((name, str(path), str(tmp_path / "logs" / name / "out_%j.log")))
    return stages


def run_driver(tmp_path: Path, stages, env) -> subprocess.CompletedProcess[str]:
    run_dir = tmp_path / "run"
    run_dir.mkdir(exist_ok=True)
    text = render_driver(stages, [("nodes", "1")], time_limit="00:30:00", job_name="j", run_dir=str(run_dir),
                         title="p")
    driver = run_dir / "driver.sh"
    driver.write_text(text)
    return subprocess.run(["bash", str(driver)], env=env, capture_output=True, text=True, timeout=60)


def test_driver_runs_stages_in_order_each_into_its_log(tmp_path, slurm_shims):
    stages = make_stages(tmp_path, {"a": 0, "b": 0})
    proc = run_driver(tmp_path, stages, slurm_shims["env"])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (tmp_path / "order.txt").read_text().split() == ["a", "b"]
    assert (tmp_path / "logs/a/out_77.log").read_text() == "a ran in 77\n"
    assert (tmp_path / "run/a.rc").read_text().strip() == "0" == (tmp_path / "run/b.rc").read_text().strip()
    # the leftover step is cancelled after each stage; the batch and extern steps never
    assert slurm_shims["cancelled"].read_text().split() == ["77.3", "77.3"]
    assert "every stage ended with 0" in proc.stdout


def test_driver_stops_at_a_failing_stage_with_its_code(tmp_path, slurm_shims):
    stages = make_stages(tmp_path, {"a": 0, "b": 3, "c": 0})
    proc = run_driver(tmp_path, stages, slurm_shims["env"])
    assert proc.returncode == 3
    assert (tmp_path / "order.txt").read_text().split() == ["a", "b"]
    assert not (tmp_path / "run/c.rc").exists() and not (tmp_path / "logs/c").exists()
    assert "[pipe] b failed; not run: c" in proc.stdout


def test_a_requeued_allocation_skips_what_ended_with_zero(tmp_path, slurm_shims):
    stages = make_stages(tmp_path, {"a": 0, "b": 3})
    assert run_driver(tmp_path, stages, slurm_shims["env"]).returncode == 3
    Path(stages[1][1]).write_text(f"echo b >> {tmp_path / 'order.txt'}\nexit 0\n")  # b is fixed
    proc = run_driver(tmp_path, stages, slurm_shims["env"])
    assert proc.returncode == 0, proc.stdout
    assert (tmp_path / "order.txt").read_text().split() == ["a", "b", "b"]  # a ran once
    assert "a: ended with 0 in an earlier run" in proc.stdout


def test_hostile_names_and_paths_run_nothing(tmp_path, slurm_shims):
    pwned = tmp_path / "pwned"  # what any of the values below would create if the shell ran it
    stages = make_stages(tmp_path, {"a": 0})
    stages = [("x$(touch pwned)`touch pwned`", stages[0][1], str(tmp_path / "logs/$(touch pwned)_%j.log"))]
    run_dir = tmp_path / "run;touch pwned"
    run_dir.mkdir()
    text = render_driver(stages, [("nodes", "1")], time_limit=None, job_name="j", run_dir=str(run_dir), title="p")
    driver = tmp_path / "d.sh"
    driver.write_text(text)
    proc = subprocess.run(["bash", str(driver)], env=slurm_shims["env"], capture_output=True, text=True,
                          timeout=60, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert not pwned.exists()
    assert (tmp_path / "logs/$(touch pwned)_77.log").is_file()
    assert (run_dir / "x$(touch pwned)`touch pwned`.rc").read_text().strip() == "0"
