"""Training log lines -> points and events: the fallback's lines and Megatron-Bridge 0.3.1's.

The Megatron lines are built here the way the pinned source builds them
(``training/utils/train_utils.py``'s format strings, ``eval.py``'s and
``checkpointing.py``'s), not copied from the parser.
"""

from __future__ import annotations

from datetime import datetime

from nemo_runspec.report.logparse import outcome_of, parse_lines
from nemo_runspec.report.model import EVAL_LOSS, TOKENS_PER_SEC, TRAIN_LOSS


def _points(facts, metric):
    return {(a, s): v for m, a, s, v, _ in facts.points if m == metric}


def test_fallback_lines_with_torchrun_prefix():
    lines = [
        "[default0]:[pretrain] initial loss 8.3041",
        "[default0]:[pretrain] step 5/30 | loss 7.8481 | lr 2.99e-03 | 1,557 tok/s",
        "[default0]:[pretrain] eval loss 7.4231 at step 10",
        "[default0]:[pretrain] saved checkpoint /x/checkpoints/step_00000010.pt",
        "[default0]:[pretrain] stopped after step 14 to be requeued (checkpoint saved)",
        "[default1]:[pretrain] rank 1 param sha256 abc",
        "[default0]:[pretrain] final loss 6.8846 | steps 30 | tokens 15360 | 16.7 s",
        "[default0]:[pretrain] final eval loss 7.0089",
        "[default0]:published nano3-pretrain-model-tiny:v3 (latest) -> /x/checkpoints  [registry: /r]",
    ]
    facts = parse_lines(lines, attempt=2)
    assert _points(facts, TRAIN_LOSS) == {(2, 5): 7.8481}
    assert _points(facts, TOKENS_PER_SEC) == {(2, 5): 1557.0}
    assert _points(facts, EVAL_LOSS) == {(2, 10): 7.4231, (2, 30): 7.0089}  # final eval at the last step
    kinds = [(e.kind, e.step) for e in facts.events]
    assert kinds == [("checkpoint", 10), ("stopped", 14), ("published", 30)]  # after the last step
    assert [(a.ref, a.path) for a in facts.published] == [("nano3-pretrain-model-tiny:v3", "/x/checkpoints")]


def _megatron_iteration(iteration: int, total: int, elapsed_s: float, lr: float, batch: int, loss: float,
                        when: datetime) -> str:
    # train_utils.py (Megatron-Bridge 0.3.1) builds the line piece by piece like this
    s = f" [{when.strftime('%Y-%m-%d %H:%M:%S')}]"
    s += f" iteration {iteration:8d}/{total:8d} |"
    s += f" consumed samples: {iteration * batch:12d} |"
    s += f" elapsed time per iteration (ms): {elapsed_s * 1000.0:.1f} |"
    s += f" learning rate: {lr:.6E} |"
    s += f" global batch size: {batch:5d} |"
    s += " {}: {:.6E} |".format("lm loss", loss)
    s += f" loss scale: {1.0:.1f} |"
    s += f" number of skipped iterations: {0:3d} |"
    return s


def test_megatron_bridge_lines():
    when = datetime(2025, 6, 1, 10, 0, 0)
    lines = [
        _megatron_iteration(10, 100, 0.5, 1e-4, 8, 10.23, when),
        f" validation loss at iteration 10 | lm loss value: {9.5:.6E} | lm loss PPL: {13000.0:.6E} | ",
        "  successfully saved checkpoint from iteration {:7d} to {} [ t {}/{}, p {}/{} ]".format(
            10, "/ckpt", 1, 1, 1, 1),
    ]
    facts = parse_lines(lines, seq_length=512)
    assert _points(facts, TRAIN_LOSS) == {(0, 10): 10.23}
    assert _points(facts, TOKENS_PER_SEC) == {(0, 10): 8 * 512 / 0.5}
    assert _points(facts, EVAL_LOSS) == {(0, 10): 9.5}
    times = {t for m, *_, t in facts.points if m == TRAIN_LOSS}
    assert times == {when.timestamp()}  # the line's own local time
    assert [(e.kind, e.step, e.label) for e in facts.events] == [("checkpoint", 10, "/ckpt")]
    assert facts.total_steps == 100


def test_megatron_without_seq_length_has_no_throughput():
    facts = parse_lines([_megatron_iteration(1, 2, 0.1, 1e-4, 4, 3.0, datetime(2025, 1, 1))])
    assert _points(facts, TOKENS_PER_SEC) == {}


def test_outcome_is_the_last_error_line_until_the_outcome_line_exists():
    assert outcome_of(["x", "error: first", "y", "error: artifact 'd' not found", "Traceback"]) == \
        "error: artifact 'd' not found"
    assert outcome_of(["all fine"]) == ""
