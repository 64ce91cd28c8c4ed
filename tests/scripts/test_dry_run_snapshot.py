"""scripts/dry_run_snapshot.py: a snapshot of real dry runs checks equal against itself, a
changed byte is reported with its case, expected changes are named and cannot go stale, and
only the checkout's git state is normalised."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "dry_run_snapshot.py"
# two real cases: a Slurm dry run (frozen clock, job dir paths, provenance) and a cheap one
CASES = ("pretrain-tiny@slurm", "pretrain-scales@none")


def _harness():  # noqa: ANN202 - the script as a module, for its pure functions
    spec = importlib.util.spec_from_file_location("dry_run_snapshot", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault(spec.name, module)  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(SCRIPT), *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=900, stdin=subprocess.DEVNULL)


@pytest.fixture(scope="module")
def snapshot(tmp_path_factory) -> Path:
    """A snapshot of CASES, written once for the module (each case is a real nemotron run)."""
    base = tmp_path_factory.mktemp("snap")
    snap = base / "snap"
    proc = _cli("write", str(snap), "-k", CASES[0], "-k", CASES[1], "--scratch", str(base / "scratch"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert json.loads((snap / "snapshot.json").read_text())["cases"] == list(CASES)
    return snap


def test_a_snapshot_checks_identical_against_itself(snapshot: Path) -> None:
    out = (snapshot / "pretrain-tiny@slurm.out").read_text()
    assert (snapshot / "pretrain-tiny@slurm.rc").read_text() == "0\n"
    assert "#SBATCH" in out and "nano3-pretrain_1800000000123456789" in out  # the frozen clock's exp id
    assert "commit: <commit>" in out and "branch: <branch>" in out
    proc = _cli("check", str(snapshot), "-k", CASES[0], "-k", CASES[1])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "2 identical, 0 changed, 0 expected changes" in proc.stdout


def test_a_changed_byte_is_reported_with_its_case(snapshot: Path, tmp_path: Path) -> None:
    changed = tmp_path / "snap"
    changed.mkdir()
    for path in snapshot.iterdir():
        (changed / path.name).write_bytes(path.read_bytes())
    out = changed / "pretrain-scales@none.out"
    text = out.read_text()
    out.write_text(text.replace("h100", "h200", 1))
    assert out.read_text() != text
    proc = _cli("check", str(changed), "-k", "pretrain-scales@*")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "pretrain-scales@none: CHANGED" in proc.stdout
    diff = proc.stdout.splitlines()
    assert any(line.startswith("-") and "h200" in line for line in diff)  # the snapshot's line
    assert any(line.startswith("+") and "h100" in line for line in diff)  # and what it shows now

    expect = tmp_path / "expect.txt"
    expect.write_text("pretrain-scales@*  the GPU was renamed  # a comment\n")
    proc = _cli("check", str(changed), "-k", "pretrain-scales@*", "--expect-change", str(expect))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "changed, as expected (the GPU was renamed)" in proc.stdout


def test_an_expected_change_that_did_not_happen_fails(snapshot: Path, tmp_path: Path) -> None:
    expect = tmp_path / "expect.txt"
    expect.write_text("pretrain-scales@none  will change\n")
    proc = _cli("check", str(snapshot), "-k", "pretrain-scales@*", "--expect-change", str(expect))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "expected a change that did not happen: pretrain-scales@none" in proc.stdout


def test_only_the_git_state_is_normalised() -> None:
    harness = _harness()
    sha = "0123456789abcdef0123456789abcdef01234567"
    text = (f"  provenance:\n    git:\n      commit: {sha}\n      dirty: true\n      branch: topic/x\n"
            "    time: '2027-01-15T08:00:00+00:00'\n  dirty: true\nbranch: main\n"
            f"code at {sha}\n")
    assert harness.normalise(text, sha) == (
        "  provenance:\n    git:\n      commit: <commit>\n      dirty: <dirty>\n      branch: <branch>\n"
        "    time: '2027-01-15T08:00:00+00:00'\n  dirty: true\nbranch: main\ncode at <commit>\n")


def test_every_case_runs_with_dry_run_and_the_generated_env_file() -> None:
    harness = _harness()
    names = [c.name for c in harness.cases()]
    assert len(names) == len(set(names))
    profiles = {n.split("@")[1] for n in names}
    assert {"none", "local", "slurm", "ray", "docker"} <= profiles
    for command in ("pretrain", "sft", "convert", "rl", "eval", "prep-pretrain", "pipe", "preflight"):
        assert {f"{command}@docker", f"{command}-tiny@docker"} & set(names), command
