"""The kit preflight recipe run for real (torchrun + gloo on CPU)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from nemo_runspec.runtime.outcome import Outcome, find_all, parse_line

ROOT = Path(__file__).resolve().parents[3]
SCRIPT = ROOT / "src/nemotron/recipes/kit/preflight.py"
TORCHRUN = Path(sys.executable).with_name("torchrun")


def _run(tmp_path: Path, cfg: dict, *, nproc: int = 2, env: dict | None = None):
    config = tmp_path / "preflight.yaml"
    report = tmp_path / "report.json"
    cfg = {"report_path": str(report), "timeout_s": 60, **cfg}
    config.write_text(json.dumps({"preflight": cfg}))
    proc = subprocess.run(
        [str(TORCHRUN), f"--nproc-per-node={nproc}", "--standalone",
         str(SCRIPT), "--config", str(config)],
        cwd=tmp_path, capture_output=True, text=True, timeout=180,
        env={**os.environ, "OMP_NUM_THREADS": "1", **(env or {})},
    )
    data = json.loads(report.read_text()) if report.exists() else None
    return proc, data


def test_two_ranks_pass_and_allreduce_sum(tmp_path):
    proc, data = _run(tmp_path, {"paths": [str(tmp_path)], "require_env": ["PREFLIGHT_TEST_VAR"]},
                      env={"PREFLIGHT_TEST_VAR": "s3cr3t-value"})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert data["ok"] is True and data["world_size"] == 2 and data["backend"] == "gloo"
    assert data["allreduce"] == {"expected": 3.0, "got": 3.0}
    assert sorted(r["rank"] for r in data["ranks"]) == [0, 1]
    assert "preflight passed: 2 rank(s)" in proc.stdout
    # names are reported, values never
    assert "s3cr3t-value" not in proc.stdout + proc.stderr + json.dumps(data)
    assert data["ranks"][0]["env"] == {"PREFLIGHT_TEST_VAR": "present"}
    # one outcome line (rank 0's), read by the library's reader: the verdict line word for word
    verdict = next(line for line in proc.stdout.splitlines() if line.startswith("preflight passed"))
    [outcome] = find_all(proc.stdout.splitlines())
    assert (outcome.ok, outcome.exit_code, outcome.message, outcome.recipe, outcome.rank) == \
        (True, 0, verdict, "kit/preflight", 0)
    assert outcome.figures["ranks"] == 2 and outcome.figures["backend"] == "gloo" and outcome.figures["failures"] == 0
    # the keys are the library's own (preflight writes the line itself: it ships alone)
    line = next(x for x in proc.stdout.splitlines() if parse_line(x))
    assert set(json.loads(line.partition(": ")[2])) == set(Outcome(ok=True, exit_code=0, message="").to_json())


def test_missing_env_and_unwritable_path_fail(tmp_path):
    missing = tmp_path / "nope"
    proc, data = _run(tmp_path, {"paths": [str(missing)], "require_env": ["PREFLIGHT_ABSENT_VAR"]})
    assert proc.returncode != 0
    assert data["ok"] is False
    fails = "\n".join(f for r in data["ranks"] for f in r["failures"])
    assert "PREFLIGHT_ABSENT_VAR is not set" in fails
    assert f"{missing}: missing" in fails
    assert "FAIL rank 0" in proc.stdout and "preflight FAILED" in proc.stdout
    verdict = next(line for line in proc.stdout.splitlines() if line.startswith("preflight FAILED"))
    [outcome] = find_all(proc.stdout.splitlines())
    assert not outcome.ok and outcome.exit_code == 1 == proc.returncode
    assert outcome.message.startswith(verdict + "; first failure: rank 0 (")


def test_expected_gpu_count_mismatch_fails(tmp_path):
    proc, data = _run(tmp_path, {"expect_gpus_per_node": 8}, nproc=1)
    assert proc.returncode != 0
    assert "expected 8 GPU(s), see 0" in data["ranks"][0]["failures"]


# --------------------------------------------------------------------------- exit codes
# A failed check must make *every* rank exit 1. Launchers stop the other ranks as
# soon as one exits (torchrun's agent, srun --kill-on-bad-exit) with SIGTERM; a rank
# that dies of it reports 15 / -15 instead of the recipe's 1.


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _start_ranks(tmp_path: Path, cfg: dict, world: int = 2) -> list[subprocess.Popen]:
    """``world`` plain processes forming one group, as srun starts them (no torchrun)."""
    config = tmp_path / "preflight.yaml"
    config.write_text(json.dumps({"preflight": {"report_path": str(tmp_path / "report.json"),
                                                "timeout_s": 60, **cfg}}))
    port = str(_free_port())
    procs = []
    for rank in range(world):
        env = {**os.environ, "OMP_NUM_THREADS": "1", "RANK": str(rank), "LOCAL_RANK": str(rank),
               "WORLD_SIZE": str(world), "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": port}
        procs.append(subprocess.Popen([sys.executable, str(SCRIPT), "--config", str(config)],
                                      cwd=tmp_path, env=env, text=True,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE))
    return procs


def test_a_rank_stopped_by_its_launcher_after_the_verdict_still_exits_1(tmp_path):
    """The launcher's SIGTERM (another rank already exited 1) arrives once the verdict
    is known: the rank exits 1, the recipe's failure code, not 15 / -15."""
    import signal

    rank0, rank1 = _start_ranks(tmp_path, {"require_env": ["PREFLIGHT_ABSENT_VAR"]})
    seen = []
    for line in rank0.stdout:
        seen.append(line)
        if line.startswith("preflight FAILED"):
            rank0.send_signal(signal.SIGTERM)  # what torchrun / srun do to a straggler
            break
    out0, err0 = rank0.communicate(timeout=120)
    out1, err1 = rank1.communicate(timeout=120)
    assert any(line.startswith("preflight FAILED") for line in seen), "".join(seen) + out0 + err0
    assert rank0.returncode == 1, (rank0.returncode, err0)
    assert rank1.returncode == 1, (rank1.returncode, err1)
    assert "Traceback" not in err0 + err1


def test_a_check_failing_on_one_rank_makes_every_rank_exit_1(tmp_path):
    """Rank 1's path is missing, rank 0's is fine: torchrun exits 1 and no rank was
    killed (every per-rank exit code torchrun reports is 1)."""
    (tmp_path / "mount-0").mkdir()
    for _ in range(3):  # the race this guards against does not show on every run
        proc, data = _run(tmp_path, {"paths": [str(tmp_path / "mount-$RANK")]})
        assert proc.returncode == 1, proc.stdout + proc.stderr
        assert data["ok"] is False
        fails = {r["rank"]: r["failures"] for r in data["ranks"]}
        assert fails[0] == [] and fails[1] == [f"{tmp_path / 'mount-$RANK'}: missing"]
        codes = re.findall(r"exitcode\s*:\s*(-?\d+)", proc.stderr)
        assert codes and set(codes) == {"1"}, proc.stderr


def test_a_check_that_raises_is_a_failure_of_that_rank_not_a_crash(tmp_path):
    """A bad value (not a number) fails the check on every rank with a message; the
    report is still written and every rank exits 1 without a traceback."""
    proc, data = _run(tmp_path, {"expect_gpus_per_node": "eight"})
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert data is not None and data["ok"] is False
    for r in data["ranks"]:
        assert any("expect_gpus_per_node" in f and "eight" in f for f in r["failures"]), r
    assert "preflight FAILED" in proc.stdout
    codes = re.findall(r"exitcode\s*:\s*(-?\d+)", proc.stderr)
    assert codes and set(codes) == {"1"}, proc.stderr


def test_an_unreadable_config_is_one_error_line_and_exit_2(tmp_path):
    config = tmp_path / "bad.yaml"
    config.write_bytes(b"preflight:\n  paths: [\xff]\n")
    proc = subprocess.run([sys.executable, str(SCRIPT), "--config", str(config)], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {config}:2: "), proc.stderr
    assert "Traceback" not in proc.stderr
    outcome = parse_line(proc.stdout.strip().splitlines()[-1])
    assert outcome is not None and (outcome.ok, outcome.exit_code, outcome.message) == (False, 2, lines[0])


def _run_in_image(tmp_path: Path, image: str, env: dict | None = None):
    """Two ranks with a job config naming ``image`` (as the CLI writes train.yaml)."""
    config = tmp_path / "train.yaml"
    report = tmp_path / "report.json"
    config.write_text(json.dumps({"preflight": {"report_path": str(report), "timeout_s": 60},
                                  "run": {"env": {"container_image": image}}}))
    proc = subprocess.run([str(TORCHRUN), "--nproc-per-node=2", "--standalone", str(SCRIPT), "--config", str(config)],
                          cwd=tmp_path, capture_output=True, text=True, timeout=180,
                          env={**os.environ, "OMP_NUM_THREADS": "1", **(env or {})})
    return proc, json.loads(report.read_text()) if report.exists() else None


def test_library_versions_are_reported_and_compared_with_the_table(tmp_path):
    """This venv has the megatron-bridge 0.3.1 wheel and megatron-core: the report names them,
    and where the image's row says otherwise, a note (not a failure)."""
    from importlib.metadata import version

    proc, data = _run_in_image(tmp_path, "nvcr.io/nvidia/nemo:25.11.nemotron_3_nano")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert data["image"] == "nvcr.io/nvidia/nemo:25.11.nemotron_3_nano"
    libs = data["ranks"][0]["libraries"]
    assert libs["megatron-bridge"] == version("megatron-bridge") and libs["nemo-rl"] is None
    assert "libraries (image nvcr.io/nvidia/nemo:25.11.nemotron_3_nano):" in proc.stdout
    assert f"megatron-bridge {version('megatron-bridge')}, megatron-core " in proc.stdout
    assert (f"note: {data['ranks'][0]['node']}: the compatibility table says nvcr.io/nvidia/nemo:25.11.nemotron_3_nano "
            f"has megatron-bridge 0.3.0rc0, found {version('megatron-bridge')}") in proc.stdout
    assert "preflight passed" in proc.stdout


def test_an_image_without_the_libraries_says_so(tmp_path):
    """A regular ``megatron`` package first on the path hides the venv's namespace package:
    no training library importable, the plain-image case."""
    shadow = tmp_path / "shadow" / "megatron"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("")
    proc, data = _run_in_image(tmp_path, "plain/python:3", env={"PYTHONPATH": str(shadow.parent)})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert set(data["ranks"][0]["libraries"].values()) == {None}
    assert re.search(r"^  \S+: none of megatron-bridge, megatron-core, nemo-rl, nemo-evaluator, "
                     r"nemo-evaluator-launcher: the native backends cannot run here \(the CPU fallback can\)$",
                     proc.stdout, re.M), proc.stdout
    assert "note: plain/python:3 is not in the compatibility table" in proc.stdout


def test_a_rendezvous_that_fails_ends_with_its_exception_as_the_outcome(tmp_path):
    # nothing listens on port 1: the rank's connection to the store times out
    env = {**os.environ, "RANK": "1", "WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "1"}
    proc = subprocess.run([sys.executable, str(SCRIPT), "--timeout", "1"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    exception_line = proc.stderr.strip().splitlines()[-1]
    assert "Traceback (most recent call last):" in proc.stderr and "DistNetworkError" in exception_line
    outcome = parse_line(proc.stdout.strip().splitlines()[-1])
    assert outcome is not None and (outcome.ok, outcome.exit_code, outcome.message, outcome.rank) == \
        (False, 1, exception_line, 1)
