"""The README's main job, `nemotron nano3 pipe -c tiny`, run for real: every stage starts
from the model the stage before it published, and the job ends in the chain's table,
whose pretrain perplexity on held-out text is below a uniform guess and whose RL row
answers some validation prompts exactly."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

NEMOTRON = Path(sys.executable).with_name("nemotron")
VOCAB = 4096  # the shipped sample tokenizer's


def _table(stdout: str) -> list[list[str]]:
    """The rows of the chain's table (header first), split on runs of 2+ spaces."""
    lines = stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("[eval] the chain:"))
    rows = []
    for line in lines[start + 1:]:
        if not line.startswith("  "):
            break
        rows.append(re.split(r"\s{2,}", line.strip()))
    return rows


def test_main_job_chains_every_model_and_ends_in_the_table(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("NEMOTRON_")}
    env.update(NEMOTRON_HOME=str(tmp_path / "home"), COLUMNS="250", RAY_DISABLE_USAGE_STATS="1")
    proc = subprocess.run([str(NEMOTRON), "nano3", "pipe", "-c", "tiny"], cwd=tmp_path, env=env, text=True,
                          capture_output=True, timeout=1200)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]

    from nemo_runspec.artifacts.registry import ArtifactRegistry

    reg = ArtifactRegistry(tmp_path / "home" / "artifacts")
    pretrain, sft, rl = (reg.resolve(f"nano3-{s}-model-tiny:latest").path for s in ("pretrain", "sft", "rl"))
    # each training stage started from the checkpoint the one before it published
    assert re.search(rf"^\[sft\] initialized from {re.escape(pretrain)}/step_\d+\.pt", proc.stdout, re.M)
    assert re.search(rf"^\[rl-smoke\] initialized from {re.escape(sft)}/step_\d+\.pt", proc.stdout, re.M)

    rows = _table(proc.stdout)
    assert rows[0] == ["model", "step", "perplexity", "answer loss", "exact match"]
    names = [r[0] for r in rows[1:]]
    assert names == ["uniform guess (= vocab size)", "after pretrain", "after sft", "after rl-smoke (evaluated)"]
    uniform, after_pretrain, after_sft, after_rl = rows[1:]
    assert float(uniform[2]) == VOCAB
    assert float(after_pretrain[2]) < VOCAB / 2  # clearly better than a uniform guess on held-out text
    for row in (after_pretrain, after_sft, after_rl):
        assert re.fullmatch(r"\d+\.\d% \(\d+/\d+\)", row[4]), row  # exact match, k/n answers
    # the RL smoke stage trains on the answers: they get likelier than after SFT, and some
    # come out exactly right (the sample sums are ones a 2-layer model learns in 120 steps)
    assert float(after_rl[3]) < float(after_sft[3])
    correct, total = map(int, re.fullmatch(r"\d+\.\d% \((\d+)/(\d+)\)", after_rl[4]).groups())
    assert correct / total >= 0.1, after_rl

    # the job ends with the evaluation's summary, for the evaluated (RL) model, then its
    # outcome line carrying that summary (docs/execution.md, how a job ends)
    *_, eval_line, outcome_line = proc.stdout.strip().splitlines()
    assert eval_line.startswith("eval: perplexity=") and "model=nano3-rl-model-tiny:v1" in eval_line
    assert outcome_line.startswith("nemotron-outcome: ")
    assert json.loads(outcome_line.removeprefix("nemotron-outcome: "))["message"] == eval_line
    # the same numbers are recorded with the published results
    art = reg.resolve("nano3-eval-tiny:latest")
    chain = json.loads(Path(art.path).read_text())["chain"]
    assert [row["model"] for row in chain] == ["uniform", "pretrain", "sft", "rl-smoke"]
    assert [Path(row["checkpoint"]).parent for row in chain[1:]] == [Path(pretrain), Path(sft), Path(rl)]
    assert f"{chain[1]['metrics']['perplexity']:.1f}" == after_pretrain[2]
    assert art.metadata["chain"][1]["metrics"] == chain[1]["metrics"]
