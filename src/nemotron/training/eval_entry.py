"""The entry point of the ``nano3/eval`` recipe (``recipes/nano3/eval/eval.py``): load the
config, choose the backend, evaluate, write and publish the results, and end with the
outcome line (:mod:`nemo_runspec.runtime.outcome`). The evaluation itself is in
:mod:`nemotron.training.evaluate`."""

from __future__ import annotations

import json
import os
from typing import Any

from nemo_runspec.errors import ExecutionError, NemoRunspecError

from .evaluate import (
    EXIT_BACKEND_MISSING,
    NAME,
    RESULTS,
    choose_backend,
    fallback_plan,
    load_config,
    parse_args,
    print_table,
    publish_results,
    run_fallback,
    run_native,
    summary_line,
)


def _say(msg: str) -> None:
    print(msg, flush=True)


def main(argv: list[str] | None = None, *, script: str | None = None) -> int:
    """Entry point of ``recipes/nano3/eval/eval.py``; returns the exit code. The last line
    is the outcome line (:mod:`nemo_runspec.runtime.outcome`): the ``eval: ...`` line and the metrics."""
    from nemo_runspec.runtime import outcome

    return outcome.run(NAME, lambda report: _main(report, argv, script))


def _main(report: Any, argv: list[str] | None, script: str | None) -> int:
    from nemo_runspec.evaluation import evaluator

    from .entry import job_dir

    debug = os.environ.get("NEMOTRON_DEBUG") == "1"
    try:
        config_path, overrides, tasks = parse_args(argv)
        cfg = load_config(config_path, overrides, tasks)
        from .schema import check_config

        check_config(cfg, "eval", files=[config_path])  # a hand-edited train.yaml, before anything runs
        backend = choose_backend(cfg)
        if backend == "missing":
            image = None
            if script:
                from nemo_runspec import parse

                image = parse(script).image
            wish = evaluator.evaluation_backend(cfg)
            what = "torch (the CPU fallback)" if wish == "fallback" else "nemo-evaluator-launcher"
            report.error(f"{NAME}: {what} is not installed here; install it (pip install 'nemotron[eval]' for "
                         f"NeMo Evaluator) or run in the recipe's image ({image}); the tiny CPU models: -c tiny")
            return EXIT_BACKEND_MISSING
        out_dir = job_dir()
        if backend == "native":
            _say("[eval] backend: NeMo Evaluator (nemo-evaluator-launcher)")
            results = run_native(cfg, out_dir)
        else:
            why = ("chosen by the config" if evaluator.evaluation_backend(cfg) == "fallback"
                   else "nemo-evaluator-launcher is not installed")
            _say(f"[eval] backend: CPU fallback (tiny GPT in plain PyTorch), not NeMo Evaluator: {why}")
            plan = fallback_plan(cfg)
            path = evaluator.save_eval_config(plan, out_dir)
            _say(f"[eval] evaluation config: {path}")
            results = run_fallback(plan)
            results["eval_config"] = str(path)
            print_table(results)
        results_path = out_dir / RESULTS
        from nemo_runspec.config.jobdir import atomic_write_text

        atomic_write_text(results_path, json.dumps(results, indent=2, default=str) + "\n")
        _say(f"[eval] results: {results_path}")
        publish_results(cfg, results_path, results, config_path)
        if results.get("chain"):  # the fallback chain's table (training/eval_chain.py)
            from .eval_chain import table_lines

            for table_line in table_lines(results["chain"], results["tasks"]):
                _say(table_line)
        line = summary_line(results)
        _say(line)
        metrics = {k: v for k, v in (results.get("metrics") or {}).items() if isinstance(v, int | float | str)}
        report.summary(line, **metrics, results=str(results_path))
        return 0
    except NemoRunspecError as exc:
        if debug:
            raise
        report.error(f"error: {exc}")
        return 1 if isinstance(exc, ExecutionError) else 2
    except (FloatingPointError, RuntimeError, OSError, ValueError) as exc:
        if debug:
            raise
        msg = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        report.error(f"error: {NAME} evaluation failed: {msg}")
        return 1
    except KeyboardInterrupt:
        report.error(f"{NAME}: interrupted")
        return 130


