"""W&B logging of the training stages: the CPU fallback's runs read back, and the native mappings.

The fallback runs are real ``train.py`` processes with wandb in offline mode; the
run's record log (``run-*.wandb``) is read back (tests/wandb_offline.py) and each
logged value is compared with the line the trainer printed.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from nemotron.training import wandb_logging as wl
from tests import wandb_offline
from tests.nemotron.training.test_runs import env, run  # noqa: F401 - the module's data fixture

STEP = re.compile(r"\[\w[\w-]*\] step (\d+)/\d+ \| loss ([\d.]+) \| lr ([\d.e+-]+) \| ([\d,]+) tok/s")
EVAL = re.compile(r"\[\w[\w-]*\] (?:final )?eval loss ([\d.]+)(?: at step (\d+))?")


@pytest.fixture
def wandb_env(env, tmp_path, monkeypatch) -> tuple[dict[str, str], Path]:  # noqa: F811
    wandb_dir = wandb_offline.offline_env(monkeypatch, tmp_path)
    import os

    e = {k: v for k, v in env.items() if not k.startswith("WANDB_")}
    e.update({k: v for k, v in os.environ.items() if k.startswith("WANDB_") or k.lower().endswith("_proxy")})
    return e, wandb_dir


def _check_history_matches_log(out: str, wandb_dir: Path, max_steps: int) -> list[dict]:
    (run_dir,) = wandb_offline.run_dirs(wandb_dir)
    rows = wandb_offline.history(run_dir)
    steps = [m.groups() for m in STEP.finditer(out)]
    train = [r for r in rows if "train/loss" in r]
    assert len(steps) == len(train) >= 2, out
    for (step, loss, lr, tps), row in zip(steps, train, strict=True):
        assert row["_step"] == int(step)
        assert f"{row['train/loss']:.4f}" == loss
        assert f"{row['train/lr']:.2e}" == lr
        assert f"{row['train/tokens_per_sec']:,.0f}" == tps
    evals = [r for r in rows if "eval/loss" in r]
    printed = [m.groups() for m in EVAL.finditer(out)]
    assert len(evals) == len(printed) >= 1, out
    for (loss, step), row in zip(printed, evals, strict=True):
        assert f"{row['eval/loss']:.4f}" == loss
        assert row["_step"] == (int(step) if step else max_steps)
    return rows


def test_pretrain_fallback_logs_to_wandb(tmp_path, wandb_env):
    e, wandb_dir = wandb_env
    proc = run("pretrain", tmp_path / "job", e, "logger.wandb_project=nano3-test", "+logger.wandb_entity=team",
               "fallback.max_steps=8", "fallback.log_interval=2", "fallback.eval_interval=4",
               "fallback.save_interval=0")
    assert proc.returncode == 0, proc.stderr
    assert "W&B: logging to team/nano3-test, run nano3-pretrain; offline: upload with `wandb sync" in proc.stdout
    rows = _check_history_matches_log(proc.stdout, wandb_dir, 8)
    assert [r["_step"] for r in rows if "train/loss" in r] == [2, 4, 6, 8]
    (run_dir,) = wandb_offline.run_dirs(wandb_dir)
    (rec,) = wandb_offline.of_type(run_dir, "run")
    assert (rec.entity, rec.project, rec.display_name, rec.job_type) == ("team", "nano3-test", "nano3-pretrain",
                                                                         "pretrain")
    exits = wandb_offline.of_type(run_dir, "exit")
    assert [x.exit_code for x in exits] == [0]


def test_rl_fallback_logs_with_nemo_rl_switch_and_env_settings(tmp_path, wandb_env):
    """RL turns W&B on NeMo-RL's way; project and entity come from the job's WANDB_* (env.toml [wandb])."""
    e, wandb_dir = wandb_env
    e = {**e, "WANDB_PROJECT": "from-env", "WANDB_ENTITY": "env-team"}
    proc = run("rl", tmp_path / "job", e, "logger.wandb_enabled=true", "fallback.max_steps=6",
               "fallback.log_interval=3", "fallback.eval_interval=0", "fallback.save_interval=0")
    assert proc.returncode == 0, proc.stderr
    _check_history_matches_log(proc.stdout, wandb_dir, 6)
    (run_dir,) = wandb_offline.run_dirs(wandb_dir)
    (rec,) = wandb_offline.of_type(run_dir, "run")
    assert (rec.entity, rec.project, rec.display_name) == ("env-team", "from-env", "nano3-rl")


def test_no_api_key_logs_offline_with_a_warning_instead_of_failing(tmp_path, wandb_env):
    """Online mode asked for (WANDB_MODE unset) but no key where the job runs: the run is
    kept offline (to sync later), the training is not stopped."""
    e, wandb_dir = wandb_env
    e = {k: v for k, v in e.items() if k not in ("WANDB_MODE", "WANDB_API_KEY")}
    proc = run("pretrain", tmp_path / "job", e, "logger.wandb_project=p", "fallback.max_steps=2",
               "fallback.save_interval=0", "fallback.log_interval=1", "fallback.eval_interval=0")
    assert proc.returncode == 0, proc.stderr
    assert "no W&B API key here (logger.wandb_project turned W&B on): logging offline instead" in proc.stderr
    assert "offline: upload with `wandb sync" in proc.stdout
    (run_dir,) = wandb_offline.run_dirs(wandb_dir)
    assert [r["_step"] for r in wandb_offline.history(run_dir) if "train/loss" in r] == [1, 2]


def test_off_by_default_writes_no_run(tmp_path, wandb_env):
    e, wandb_dir = wandb_env
    proc = run("sft", tmp_path / "job", e, "fallback.max_steps=2", "fallback.save_interval=0")
    assert proc.returncode == 0, proc.stderr
    assert "W&B" not in proc.stdout and wandb_offline.run_dirs(wandb_dir) == []


def test_missing_wandb_in_the_job_is_one_line(tmp_path, wandb_env):
    e, _ = wandb_env
    stub = tmp_path / "no-wandb"
    stub.mkdir()
    (stub / "wandb.py").write_text("raise ImportError('No module named wandb')\n")
    e = {**e, "PYTHONPATH": f"{stub}:{e.get('PYTHONPATH', '')}"}
    proc = run("pretrain", tmp_path / "job", e, "logger.wandb_project=nano3-test", "fallback.max_steps=2")
    assert proc.returncode == 2
    assert proc.stderr.strip() == (
        "error: W&B logging is on (logger.wandb_project) but the wandb package is not installed here "
        "(pip install 'nemotron[wandb]', or turn it off: logger.wandb_project=null)")


# -- one rule, three backends --------------------------------------------------------------

@pytest.mark.parametrize(("kind", "cfg", "environ", "expected"), [
    ("pretrain", {"logger": {"wandb_project": "p", "wandb_exp_name": "n", "wandb_entity": "e"}}, {},
     wl.WandbSettings("p", "e", "n", None, "logger.wandb_project")),
    ("pretrain", {"logger": {"wandb_project": None, "wandb_exp_name": "n"}}, {"WANDB_PROJECT": "env"}, None),
    ("pretrain", {"logger": {"wandb_project": "p"}, "run": {"wandb": False}}, {}, None),
    ("sft", {"run": {"wandb": {"enabled": True}}, "logger": {"wandb_exp_name": "n"}},
     {"WANDB_PROJECT": "env", "WANDB_ENTITY": "t"}, wl.WandbSettings("env", "t", "n", None, "run.wandb")),
    ("rl", {"logger": {"wandb_enabled": True, "wandb": {"project": None, "name": "r"}}}, {"WANDB_PROJECT": "env"},
     wl.WandbSettings("env", None, "r", None, "logger.wandb_enabled")),
    ("rl", {"logger": {"wandb_enabled": False, "wandb": {"project": "p"}}}, {}, None),
    ("rl", {"run": {"wandb": {"project": "rp"}}, "logger": {"wandb_enabled": False}}, {},
     wl.WandbSettings("rp", None, None, None, "run.wandb")),
])
def test_settings_rule(kind, cfg, environ, expected):
    assert wl.wandb_settings(cfg, kind, environ) == expected


def test_native_mappings_use_the_pinned_libraries_field_names():
    """Megatron-Bridge: LoggerConfig fields read from the pinned wheel's source; NeMo-RL:
    keys its v0.4.0 logger reads (``cfg["wandb_enabled"]``, ``wandb.init(**cfg["wandb"])``)."""
    from tests.nemotron import megatron_bridge_wheel as mbw

    source = (mbw.wheel_root() / "training" / "config.py").read_text()
    logger = next(n for n in ast.parse(source).body if isinstance(n, ast.ClassDef) and n.name == "LoggerConfig")
    fields = {s.target.id for s in logger.body if isinstance(s, ast.AnnAssign)}
    settings = wl.WandbSettings("p", "e", "n", "/ckpt/wandb")
    mapped = wl.megatron_bridge_logger(settings)
    assert mapped == {"wandb_project": "p", "wandb_entity": "e", "wandb_exp_name": "n", "wandb_save_dir": "/ckpt/wandb"}
    assert set(mapped) <= fields
    container = wl.apply_to_native("rl", {"logger": {"wandb_enabled": False, "wandb": {"project": None, "tags": ["x"]},
                                                     "log_dir": "logs"}}, settings)
    assert container["logger"] == {"wandb_enabled": True, "log_dir": "logs",
                                   "wandb": {"project": "p", "entity": "e", "name": "n", "tags": ["x"]}}
    assert wl.apply_to_native("pretrain", {"logger": {"log_interval": 1}}, None) == {"logger": {"log_interval": 1}}


def test_megatron_bridge_build_config_sets_wandb_save_dir():
    from types import SimpleNamespace as NS

    from nemotron.training import megatron_bridge as mb

    def importer(name):
        assert name == mb.RECIPES["pretrain"] or name == mb.BLEND_FIELDS
        if name == mb.BLEND_FIELDS:
            return lambda **kw: (None, None, None)
        return lambda: NS(logger=NS(wandb_project=None, wandb_entity=None, wandb_exp_name=None,
                                    wandb_save_dir=None, log_interval=1), dataset=NS(blend=None, blend_per_split=None,
                                                                                     split=None))

    cfg = wl.apply_to_native("pretrain", {"logger": {}}, wl.WandbSettings("p", "e", "n", "/s"))
    out = mb.build_config("pretrain", cfg, importer=importer)
    assert (out.logger.wandb_project, out.logger.wandb_entity, out.logger.wandb_exp_name,
            out.logger.wandb_save_dir) == ("p", "e", "n", "/s")


# -- the native branch of train.py's entry point ---------------------------------------------

def _native_main(kind: str, tmp_path: Path, yaml_text: str, *extra: str) -> dict:
    """``entry.main`` down its native branch: ``json`` (a stdlib module, so importable and
    usable) stands for the native backend; the run is captured instead of started."""
    from nemotron.training import entry

    config = tmp_path / "train.yaml"
    config.write_text(yaml_text)
    seen: list[tuple[dict, list[str]]] = []

    def native_run(container: dict, extras: list[str]) -> int:
        seen.append((container, extras))
        return 0

    code = entry.main(kind, ["--config", str(config), *extra], description="t", native_module="json",
                      script=__file__, native_run=native_run)
    assert code == 0 and len(seen) == 1
    return seen[0][0]


def test_native_pretrain_gets_wandb_settings_in_megatron_bridge_logger_fields(tmp_path, monkeypatch):
    monkeypatch.setenv("WANDB_PROJECT", "env-proj")
    monkeypatch.setenv("WANDB_ENTITY", "env-team")
    container = _native_main("pretrain", tmp_path, "run:\n  wandb:\n    enabled: true\n"
                                                   "logger:\n  log_interval: 5\n  wandb_exp_name: nano3-pretrain\n"
                                                   "  wandb_save_dir: /ckpt/wandb\n")
    assert "run" not in container
    assert container["logger"] == {"log_interval": 5, "wandb_project": "env-proj", "wandb_entity": "env-team",
                                   "wandb_exp_name": "nano3-pretrain", "wandb_save_dir": "/ckpt/wandb"}
    off = _native_main("pretrain", tmp_path, "logger:\n  log_interval: 5\n  wandb_project: null\n")
    assert off["logger"] == {"log_interval": 5, "wandb_project": None}


def test_native_rl_gets_wandb_settings_in_nemo_rl_logger_config(tmp_path, monkeypatch):
    monkeypatch.setenv("WANDB_ENTITY", "env-team")
    monkeypatch.delenv("WANDB_PROJECT", raising=False)
    container = _native_main("rl", tmp_path, "logger:\n  wandb_enabled: false\n  log_dir: logs\n"
                                             "  wandb:\n    project: rl-proj\n    name: nano3-rl\n",
                             "logger.wandb_enabled=true")
    assert container["logger"] == {"wandb_enabled": True, "log_dir": "logs",
                                   "wandb": {"project": "rl-proj", "entity": "env-team", "name": "nano3-rl"}}
