"""nemo_runspec.evaluation.evaluator, offline: task flags, W&B injection, the evaluation config, images."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest
import yaml

from nemo_runspec.errors import CLIUsageError, ConfigError
from nemo_runspec.evaluation import evaluator as ev

RECIPE = {
    "run": {"model": "m:latest", "env": {"host": "login", "account": "acct", "user": "me"}},
    "tasks": None,
    "launcher_defaults": {"execution": "slurm/default", "deployment": "vllm"},
    "execution": {"type": "slurm", "hostname": "${oc.select:run.env.host,null}",
                  "account": "${oc.select:run.env.account,null}",
                  "output_dir": "${oc.select:run.env.remote_job_dir,null}",
                  "auto_export": {"destinations": [], "export_image": "python:3.12.7-slim"}},
    "deployment": {"type": "vllm", "image": "vllm/vllm-openai:v1", "checkpoint_path": "${art:model,path}"},
    "evaluation": {"tasks": [{"name": "lm-evaluation-harness.mmlu"}, {"name": "lm-evaluation-harness.gsm8k"},
                             {"name": "hellaswag"}]},
    "export": {"wandb": {"entity": None, "project": None}},
    "fallback": {"enabled": "auto"},
    "publish": {"name": "nano3-eval"},
}


# ----------------------------------------------------------------- task flags


@pytest.mark.parametrize("args, tasks, rest", [
    (["-t", "mmlu", "--task", "gsm8k"], ["mmlu", "gsm8k"], []),
    (["--task=mmlu,gsm8k", "x=1", "-tmmlu"], ["mmlu", "gsm8k"], ["x=1"]),
    (["-t=hellaswag", "--other", "v"], ["hellaswag"], ["--other", "v"]),
    (["a=1", "b"], [], ["a=1", "b"]),
])
def test_parse_task_flags(args, tasks, rest):
    assert ev.parse_task_flags(args) == (tasks, rest)


@pytest.mark.parametrize("args", [["--task"], ["-t", "--dry-run"], ["--task="], ["-t", ","]])
def test_task_flag_without_a_name_is_a_usage_error(args):
    with pytest.raises(CLIUsageError, match="needs a task name"):
        ev.parse_task_flags(args)


def test_select_tasks_by_plain_or_full_name_keeps_config_order():
    tasks = RECIPE["evaluation"]["tasks"]
    picked = ev.select_tasks(tasks, ["gsm8k", "lm-evaluation-harness.mmlu"])
    assert [t["name"] for t in picked] == ["lm-evaluation-harness.mmlu", "lm-evaluation-harness.gsm8k"]
    assert ev.select_tasks(tasks, []) == tasks
    with pytest.raises(ConfigError) as err:
        ev.select_tasks(tasks, ["gsm8"])
    assert "unknown task 'gsm8'" in str(err.value) and "gsm8k" in str(err.value)


def test_wanted_tasks_accepts_list_string_or_null():
    assert ev.wanted_tasks({"tasks": None}) == []
    assert ev.wanted_tasks({"tasks": "a, b"}) == ["a", "b"]
    assert ev.wanted_tasks({"tasks": ["a"]}) == ["a"]
    with pytest.raises(ConfigError):
        ev.wanted_tasks({"tasks": {"a": 1}})


# ----------------------------------------------------------------- W&B


def test_inject_wandb_fills_only_project_and_entity_config_wins():
    section = {"project": "p", "entity": "e", "api_key_env": "MY_KEY", "tags": ["t"], "group": "g"}
    out = ev.inject_wandb(RECIPE, section)
    assert out["export"]["wandb"] == {"entity": "e", "project": "p"}
    assert RECIPE["export"]["wandb"] == {"entity": None, "project": None}  # input untouched
    mine = {**RECIPE, "export": {"wandb": {"entity": "mine", "project": None}}}
    assert ev.inject_wandb(mine, section)["export"]["wandb"] == {"entity": "mine", "project": "p"}
    no_export = {k: v for k, v in RECIPE.items() if k != "export"}
    assert "export" not in ev.inject_wandb(no_export, section)  # the config did not ask for W&B
    assert ev.inject_wandb(RECIPE, {**section, "mode": "disabled"})["export"]["wandb"]["project"] is None


def test_evaluator_config_names_the_key_never_holds_it(monkeypatch):
    monkeypatch.setenv("WANDB_API_KEY", "wandb-secret-value-0123456789")
    cfg = ev.inject_wandb(RECIPE, {"project": "p", "entity": "e"})
    out = ev.evaluator_config(cfg, resolve_artifacts=False)
    assert out["execution"]["auto_export"]["destinations"] == ["wandb"]
    assert out["export"]["env_vars"] == {"WANDB_API_KEY": "host:WANDB_API_KEY"}
    assert "wandb-secret-value" not in yaml.safe_dump(out)
    assert ev.wandb_export(out) == {"entity": "e", "project": "p"}


def test_evaluator_config_without_wandb_project_drops_the_export():
    out = ev.evaluator_config(RECIPE, resolve_artifacts=False)
    assert "export" not in out
    assert out["execution"]["auto_export"]["destinations"] == []
    assert ev.wandb_export(out) is None


def test_evaluator_config_strips_our_keys_resolves_run_keeps_art():
    out = ev.evaluator_config({**RECIPE, "tasks": ["mmlu"]}, resolve_artifacts=False)
    assert not set(ev.LAUNCHER_KEYS) & set(out)
    assert out["execution"]["hostname"] == "login" and out["execution"]["account"] == "acct"
    assert out["execution"]["output_dir"] is None
    assert out["deployment"]["checkpoint_path"] == "${art:model,path}"
    assert [t["name"] for t in out["evaluation"]["tasks"]] == ["lm-evaluation-harness.mmlu"]


def test_evaluator_config_resolves_artifacts_through_the_registry(tmp_path):
    from nemo_runspec.artifacts.registry import ArtifactRegistry, set_registry

    ckpt = tmp_path / "ckpt"
    ckpt.mkdir()
    reg = ArtifactRegistry(tmp_path / "reg")
    reg.publish("m", ckpt)
    set_registry(reg)
    try:
        out = ev.evaluator_config(RECIPE)
    finally:
        set_registry(None)
    assert out["deployment"]["checkpoint_path"] == str(ckpt)


def test_literal_secret_in_the_config_is_refused():
    bad = {**RECIPE, "export": {"wandb": {"entity": "e", "project": "p"},
                                "env_vars": {"WANDB_API_KEY": "0123456789abcdef"}}}
    with pytest.raises(ConfigError, match="export.env_vars.WANDB_API_KEY holds a literal secret"):
        ev.evaluator_config(bad, resolve_artifacts=False)
    ok = {**RECIPE, "env_vars": {"HF_TOKEN": "host:HF_TOKEN", "NGC_API_KEY": "runtime:NGC_API_KEY"}}
    assert ev.evaluator_config(ok, resolve_artifacts=False)["env_vars"]["HF_TOKEN"] == "host:HF_TOKEN"


def test_evaluation_backend_rule():
    assert ev.evaluation_backend({}) == "nemo-evaluator"
    assert ev.evaluation_backend({"fallback": {"enabled": False}}) == "nemo-evaluator"
    assert ev.evaluation_backend({"fallback": {"enabled": "auto"}, "backend": "native"}) == "nemo-evaluator"
    assert ev.evaluation_backend({"fallback": {"enabled": True}}) == "fallback"
    assert ev.evaluation_backend({"backend": "torch"}) == "fallback"
    assert ev.evaluation_backend({"fallback": {}}) == "auto"


# ----------------------------------------------------------------- launcher defaults


@pytest.fixture()
def fake_launcher(tmp_path, monkeypatch):
    """A stand-in ``nemo_evaluator_launcher`` package holding packaged configs shaped like 0.2.6's."""
    pkg = tmp_path / "fake" / "nemo_evaluator_launcher"
    (pkg / "configs" / "execution" / "slurm").mkdir(parents=True)
    (pkg / "configs" / "deployment").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "configs" / "__init__.py").write_text("")
    (pkg / "configs" / "execution" / "slurm" / "default.yaml").write_text(textwrap.dedent("""\
        type: slurm
        hostname: ???
        account: ???
        output_dir: ???
        partition: batch
        num_instances: 1
        proxy:
          image: haproxy:latest
        """))
    (pkg / "configs" / "deployment" / "vllm.yaml").write_text("type: vllm\nimage: vllm/vllm-openai:latest\n"
                                                            "port: 8000\n")
    monkeypatch.syspath_prepend(str(tmp_path / "fake"))
    for name in [m for m in sys.modules if m.startswith("nemo_evaluator_launcher")]:
        monkeypatch.delitem(sys.modules, name)
    yield pkg
    for name in [m for m in sys.modules if m.startswith("nemo_evaluator_launcher")]:
        del sys.modules[name]  # the stand-in must not outlive the test


def test_compose_over_launcher_defaults_keeps_required_marks(fake_launcher):
    assert ev.launcher_available()
    config = ev.evaluator_config(RECIPE, resolve_artifacts=False)
    out = ev.compose_with_launcher_defaults(config, RECIPE["launcher_defaults"])
    assert out["execution"]["partition"] == "batch" and out["execution"]["hostname"] == "login"
    assert out["deployment"]["port"] == 8000 and out["deployment"]["image"] == "vllm/vllm-openai:v1"
    # our null did not hide the launcher's required value: it is reported as missing
    assert ev.missing_values(out) == ["execution.output_dir"]
    with pytest.raises(ConfigError, match="no execution config 'nope'"):
        ev.compose_with_launcher_defaults(config, {"execution": "nope"})


# ----------------------------------------------------------------- images


def test_collect_images_and_squash_plans():
    cfg = ev.evaluator_config(ev.inject_wandb(RECIPE, {"project": "p", "entity": "e"}), resolve_artifacts=False)
    cfg["evaluation"]["tasks"][2]["container"] = "my/harness:1"
    images = ev.collect_images(cfg, harness=lambda c: {"lm-evaluation-harness.mmlu": "nvcr.io/x/lmeh:1"})
    got = [(i.role, i.image, i.where, i.settable) for i in images]
    assert got == [
        ("model server", "vllm/vllm-openai:v1", "deployment.image", True),
        ("export (wandb)", "python:3.12.7-slim", "execution.auto_export.export_image", True),
        ("benchmark lm-evaluation-harness.mmlu", "nvcr.io/x/lmeh:1", None, False),
        ("benchmark lm-evaluation-harness.gsm8k", None, None, False),
        ("benchmark hellaswag", "my/harness:1", "evaluation.tasks[2].container", False),
    ]
    values = {"account": "a", "partition": "p", "squash_dir": "/sq"}
    plans = ev.plan_image_squash(images, values)
    assert [img.image for img, _ in plans] == ["vllm/vllm-openai:v1", "python:3.12.7-slim"]
    assert all(plan.path.startswith("/sq/") and plan.path.endswith(".sqsh") for _, plan in plans)
    assert "enroot import" in plans[0][1].script
    out = ev.apply_squashed(cfg, plans)
    assert out["deployment"]["image"] == plans[0][1].path
    assert out["execution"]["auto_export"]["export_image"] == plans[1][1].path
    assert out["evaluation"]["tasks"][2]["container"] == "my/harness:1"
    assert ev.plan_image_squash(images, {"account": "a"}) == []  # no squash_dir: nothing to import


def test_proxy_image_only_with_several_instances():
    cfg = {"deployment": {"type": "none"}, "execution": {"type": "slurm", "num_instances": 1,
                                                          "proxy": {"image": "haproxy:1"}}}
    assert ev.collect_images(cfg, harness=None) == []
    cfg["execution"]["num_instances"] = 2
    assert [i.image for i in ev.collect_images(cfg, harness=None)] == ["haproxy:1"]


def test_save_eval_config_writes_yaml(tmp_path):
    cfg = ev.evaluator_config(RECIPE, resolve_artifacts=False)
    path = ev.save_eval_config(cfg, tmp_path)
    assert path == tmp_path / "eval.yaml"
    assert yaml.safe_load(path.read_text()) == cfg
    assert not [p for p in Path(tmp_path).iterdir() if p.name != "eval.yaml"]  # atomic: no leftovers


def test_saved_config_names_the_key_verbatim_and_refuses_credentials(tmp_path):
    cfg = ev.evaluator_config(ev.inject_wandb(RECIPE, {"project": "p", "entity": "e"}), resolve_artifacts=False)
    text = ev.save_eval_config(cfg, tmp_path).read_text()
    assert "WANDB_API_KEY: host:WANDB_API_KEY" in text  # a name, kept as the launcher needs it
    with pytest.raises(ConfigError, match="deployment.extra_args looks like a credential"):
        ev.save_eval_config({**cfg, "deployment": {"extra_args": "--token hf_abcdefghijklmnopqrstuvwxyz0123"}},
                            tmp_path)


def test_the_library_module_stays_a_library():
    """No nemotron import (the library never imports the CLI package); importing it is light."""
    import ast

    from tests.import_probes import imported_after

    tree = ast.parse(Path(ev.__file__).read_text())
    names = [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
    names += [n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
    assert not [n for n in names if n.split(".")[0] == "nemotron"]
    proc = imported_after("import nemo_runspec.evaluation.evaluator", ("omegaconf", "rich", "nemo_run", "yaml", "torch"))
    assert proc.stdout.strip() == ""


def test_the_launcher_and_image_helpers_stay_importable_from_the_evaluator_module():
    """They moved to nemo_runspec.evaluation.launcher; nemo_runspec.evaluation.evaluator is the public path."""
    from nemo_runspec.evaluation import evaluator
    from nemo_runspec.evaluation import launcher as eval_launcher

    for name in ("LAUNCHER_MODULE", "EvaluatorImage", "apply_squashed", "collect_images", "harness_images",
                 "launcher_available", "plan_image_squash"):
        assert getattr(evaluator, name) is getattr(eval_launcher, name), name
