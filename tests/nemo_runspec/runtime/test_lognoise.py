"""nemo_runspec.runtime.lognoise on logs of real jobs of the local cluster (tests/nemo_runspec/slurm/logs/,
paths made neutral): what is noise, what is the job's own last error, the stream filter."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from nemo_runspec.runtime import lognoise as N

LOGS = Path(__file__).parents[1] / "slurm" / "logs"


def _lines(case: str, name: str = "log.out") -> list[str]:
    return (LOGS / case / name).read_text().splitlines()


def test_torchruns_failure_report_is_folded_and_the_ranks_lines_are_kept():
    lines = _lines("pretrain_failed_two_nodes")
    folded = N.fold(lines)
    ranks = [ln for ln in lines if ln.startswith("[default0]:")]
    slurm = [ln for ln in lines if ln.startswith("slurmstepd")]
    assert folded.kept == ranks + slurm  # everything the job (and Slurm) said, in order
    assert folded.counts == {N.TORCHRUN: len(lines) - len(ranks) - len(slurm)}
    for needle in ("ChildFailedError", "Root Cause", "To enable traceback", "torch/distributed/elastic", "===="):
        assert not any(needle in ln for ln in folded.kept), needle


def test_teardown_messages_after_a_passed_preflight_are_folded():
    lines = _lines("preflight_passed_two_nodes")
    folded = N.fold(lines)
    assert folded.kept == [ln for ln in lines if ln.startswith("[default0]:")]
    for needle in ("frame #", "[c10d]", "Exception raised from", "failed to shutdown the rendezvous", "omitting"):
        assert not any(needle in ln for ln in folded.kept), needle
    assert set(folded.counts) == {N.TEARDOWN, N.TORCHRUN}  # the agent's own rendezvous warning is torchrun's


@pytest.mark.parametrize("case", ["pretrain_failed_two_nodes", "user_exception_torchrun", "time_limit", "scancel"])
def test_the_batch_scripts_tracing_is_folded_with_the_script_at_hand(case):
    lines = _lines(case, "sbatch.out")
    script = _lines(case, "sbatch.sh")
    folded = N.fold(lines, script_lines=script)
    body = {s.strip() for s in script if s.strip()}
    assert not any(ln.startswith("+") for ln in folded.kept)
    assert not any(ln.strip() in body for ln in folded.kept if ln.strip())  # set -v's echo of the script
    assert not any(ln.startswith("job exited with code") for ln in folded.kept)
    assert [ln for ln in folded.kept if ln.strip()] == \
        [ln for ln in lines if ln.startswith(("srun:", "slurmstepd"))]  # what Slurm's tools said is kept
    assert folded.counts[N.SHELL] == len(lines) - len(folded.kept)


@pytest.mark.parametrize(("case", "expected"), [
    ("user_exception_torchrun", "ZeroDivisionError: division by zero"),
    ("pretrain_failed_two_nodes",
     "error: training data not found: /nonexistent/x (run `nemotron nano3 data prep pretrain` first or fix data.data_path)"),
    ("time_limit", "slurmstepd-n1: error: *** STEP 108.1 ON n1 CANCELLED AT 2026-11-28T05:28:07 DUE TO TIME LIMIT ***"),
    ("preflight_passed_two_nodes", None),
])
def test_the_jobs_own_last_error(case, expected):
    assert N.last_error(_lines(case)) == expected


def test_last_error_reads_chained_and_prefixed_tracebacks_and_skips_torchruns_own():
    lines = [
        "[rank1]: Traceback (most recent call last):",
        '[rank1]:   File "train.py", line 3, in <module>',
        "[rank1]: KeyError: 'lr'",
        "[rank1]: ",
        "[rank1]: During handling of the above exception, another exception occurred:",
        "[rank1]: Traceback (most recent call last):",
        '[rank1]:   File "train.py", line 5, in <module>',
        "[rank1]: myproject.errors.BadConfig: no learning rate",
        "Traceback (most recent call last):",
        '  File "/opt/venv/bin/torchrun", line 6, in <module>',
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
        "=" * 60,
        "train.py FAILED",
        "=" * 60,
        "srun: error: n1: task 0: Exited with exit code 1",
    ]
    assert N.last_error(lines) == "myproject.errors.BadConfig: no learning rate"
    assert N.last_error(lines[-1:]) == "srun: error: n1: task 0: Exited with exit code 1"
    assert N.last_error(["all good", ""]) is None


def _stream(data: bytes, sizes: list[int]) -> str:
    f = N.StreamFilter(note="; see the log")
    out, i = [], 0
    for n in sizes:
        out.append(f.feed(data[i:i + n]))
        i += n
    out.append(f.feed(data[i:]))
    return "".join(out) + f.close()


def test_the_stream_filter_folds_frames_whatever_the_chunks():
    data = (LOGS / "preflight_passed_two_nodes" / "log.out").read_bytes() + "tail ✓ without newline".encode()
    whole = _stream(data, [])
    rng = random.Random(7)
    for _ in range(20):  # cut anywhere, inside a line and inside the UTF-8 of ✓
        assert _stream(data, [rng.randint(1, 50) for _ in range(60)]) == whole
    assert "frame #" not in whole and "Exception raised from" not in whole
    # after the job's successful outcome line, the teardown warnings go too
    assert "[c10d]" not in whole and "failed to shutdown the rendezvous" not in whole
    notes = [ln for ln in whole.splitlines() if ln.startswith("[nemotron: ")]
    folded = len(data.decode().splitlines()) - (len(whole.splitlines()) - len(notes))
    assert notes == [f"[nemotron: {folded} lines of {N.TEARDOWN} folded; see the log]"]
    assert whole.endswith("tail ✓ without newline")
    kept = [ln for ln in data.decode().splitlines() if ln.startswith("[default0]:")]
    assert [ln for ln in whole.splitlines() if ln.startswith("[default0]:")] == kept


def test_before_a_success_only_the_frames_are_folded():
    text = ("[W1128 04:50:40.89 TCPStore.cpp:115] [c10d] recvValue failed on SocketImpl: Connection reset\n"
            "Exception raised from recvBytes at Utils.hpp:787 (most recent call first):\n"
            "frame #0: c10::Error::Error() + 0x9d\nframe #1: <unknown function> + 0x674777d\n\n"
            "[default0]:error: rank 1 lost its peer\n")
    out = _stream(text.encode(), [])
    assert out == ("[W1128 04:50:40.89 TCPStore.cpp:115] [c10d] recvValue failed on SocketImpl: Connection reset\n"
                   f"[nemotron: 4 lines of {N.TEARDOWN} folded; see the log]\n"
                   "[default0]:error: rank 1 lost its peer\n")
