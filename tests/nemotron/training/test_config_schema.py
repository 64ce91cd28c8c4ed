"""Issue 30, class 6: typed values in recipe configs (nemotron.training.schema).

Every typed key of the training and evaluation configs, fed values of the wrong
type (hypothesis draws them), is one ConfigError line naming the key, the value
and the expected type; through the CLI that is exit 2 before anything runs or is
submitted, and in the job (a hand-edited train.yaml) exit 2 before training.
"""

from __future__ import annotations

import os
import subprocess
import sys
import typing
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nemo_runspec.config.overrides import parse_value
from nemo_runspec.errors import ConfigError
from nemotron.recipes import RECIPES_DIR
from nemotron.training import schema

NEMOTRON = Path(sys.executable).with_name("nemotron")


def _typed_leaves(model, prefix=""):
    """(dotted key, annotation, FieldInfo) of every scalar key of ``model`` (sections expanded)."""
    from pydantic import BaseModel

    for name, info in model.model_fields.items():
        key = prefix + (info.alias or name)
        ann = info.annotation
        sections = [a for a in (ann, *typing.get_args(ann)) if isinstance(a, type) and issubclass(a, BaseModel)]
        if sections:
            yield from _typed_leaves(sections[0], key + ".")
        elif ann in (int, float, bool) or typing.get_origin(ann) in (typing.Union, typing.Literal) \
                or isinstance(ann, type(int | None)):
            yield key, ann, info


def _nest(dotted: str, value):
    out: dict = {}
    node = out
    parts = dotted.split(".")
    for part in parts[:-1]:
        node = node.setdefault(part, {})
    node[parts[-1]] = value
    return out


def _accepts(info, value) -> bool:
    from pydantic import TypeAdapter, ValidationError

    ann = typing.Annotated[info.annotation, *info.metadata] if info.metadata else info.annotation
    try:
        TypeAdapter(ann).validate_python(value, strict=True)
    except ValidationError:
        return False
    return True


LEAVES = {kind: list(_typed_leaves(model)) for kind, model in (("pretrain", schema.TrainingConfig),
                                                              ("eval", schema.EvalConfig))}
_BAD = st.one_of(st.text(max_size=8), st.floats(allow_nan=False, allow_infinity=False), st.booleans(),
                 st.integers(min_value=-10**6, max_value=10**6), st.lists(st.integers(), max_size=2))


@settings(max_examples=400, deadline=None)
@given(data=st.data())
def test_every_typed_key_refuses_a_wrong_value_in_one_line(data) -> None:
    kind = data.draw(st.sampled_from(sorted(LEAVES)))
    key, _, info = data.draw(st.sampled_from(LEAVES[kind]))
    if key.startswith("publish."):
        return  # the data-prep publish section has its own tests
    value = data.draw(_BAD)
    cfg = _nest(key, value)
    if _accepts(info, value):
        try:
            schema.check_config(cfg, kind)
        except ConfigError as exc:  # the one cross-key rule: d_model a multiple of n_head
            assert "must be a multiple of n_head" in str(exc)
        return
    with pytest.raises(ConfigError) as exc:
        schema.check_config(cfg, kind)
    line = str(exc.value)
    assert "\n" not in line and len(line) < 400
    assert exc.value.key.startswith(key.rsplit(".", 1)[0]), (key, line)
    if exc.value.key == key and "must be" in line:
        shown = repr(value) if not isinstance(value, (bool, list)) else None
        assert shown is None or shown[:60] in line or f"string {value!r}"[:60] in line, line


@pytest.mark.parametrize(("override", "expected"), [
    ("fallback.max_steps=abc", "key 'fallback.max_steps' must be an integer >= 1, got string 'abc'"),
    ("fallback.max_steps=2.5", "key 'fallback.max_steps' must be an integer >= 1, got 2.5"),
    ("fallback.lr=abc", "key 'fallback.lr' must be a number > 0, got string 'abc'"),
    ("fallback.max_steps='5'", "key 'fallback.max_steps' must be an integer >= 1, got string '5'"),
    ("fallback.model.n_layer=0", "key 'fallback.model.n_layer' must be an integer >= 1, got 0"),
    ("fallback.model.n_head=3", "key 'fallback.model': d_model (64) must be a multiple of n_head (3): each "
                                "attention head gets d_model / n_head dimensions"),
    ("fallback.device=gpu", "key 'fallback.device' must be one of 'auto', 'cpu', 'cuda', got string 'gpu'"),
    ("fallback.enabled=maybe", "key 'fallback.enabled' must be true or false or one of 'auto', got string 'maybe'"),
    ("train.train_iters=1.5", "key 'train.train_iters' must be an integer >= 1, got 1.5"),
    ("optimizer.lr=abc", "key 'optimizer.lr' must be a number >= 0, got string 'abc'"),
])
def test_overrides_of_the_tiny_pretrain_config(override: str, expected: str) -> None:
    from omegaconf import OmegaConf

    from nemo_runspec.config import load_config_file

    data = OmegaConf.to_container(load_config_file(RECIPES_DIR / "nano3/stage0_pretrain/config/tiny.yaml"))
    key, _, raw = override.partition("=")
    node = data
    for part in key.split(".")[:-1]:
        node = node[part]
    node[key.split(".")[-1]] = parse_value(raw)  # as the override parser reads it
    with pytest.raises(ConfigError) as exc:
        schema.check_config(data, "pretrain", overrides=[override])
    assert str(exc.value).startswith(expected + f" in override '{override}'"), str(exc.value)


def test_shipped_configs_pass() -> None:
    from nemo_runspec.config import load_config_file

    for kind, rel in (("pretrain", "stage0_pretrain"), ("sft", "stage1_sft"), ("rl", "stage2_rl"), ("eval", "eval")):
        for name in ("default", "tiny"):
            schema.check_config(load_config_file(RECIPES_DIR / f"nano3/{rel}/config/{name}.yaml"), kind)


def _cli(tmp: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("NEMOTRON_")}
    env.update(HOME=str(tmp), NEMOTRON_HOME=str(tmp / "nhome"), COLUMNS="200", NO_COLOR="1")
    return subprocess.run([str(NEMOTRON), *args], cwd=tmp, env=env, capture_output=True, text=True, timeout=180,
                          stdin=subprocess.DEVNULL)


# A value of the wrong type on the command line is refused by the override rule first
# (docs/cli.md, "Overrides": it knows the key's current type); a value of the right type
# outside what the script accepts by the recipe's typed config (docs/training.md).
@pytest.mark.parametrize(("args", "expected"), [
    (["nano3", "pretrain", "-c", "tiny", "fallback.max_steps=abc"],
     "error: invalid value in override 'fallback.max_steps=abc': fallback.max_steps expects an int, "
     "got the string 'abc' (it is 30 now"),
    (["nano3", "sft", "-c", "tiny", "fallback.max_steps=2.5"],
     "error: invalid value in override 'fallback.max_steps=2.5': fallback.max_steps expects an int, got the float 2.5"),
    (["nano3", "rl", "-c", "tiny", "fallback.lr=abc"],
     "error: invalid value in override 'fallback.lr=abc': fallback.lr expects a float, got the string 'abc'"),
    (["nano3", "pretrain", "-c", "tiny", "fallback.max_steps=0"],
     "error: key 'fallback.max_steps' must be an integer >= 1, got 0 in override 'fallback.max_steps=0' "
     "(e.g. fallback.max_steps=30)"),
    (["nano3", "rl", "-c", "tiny", "grpo.max_num_steps=0"],
     "error: key 'grpo.max_num_steps' must be an integer >= 1, got 0 in override 'grpo.max_num_steps=0' "
     "(e.g. grpo.max_num_steps=3)"),
    (["nano3", "eval", "-c", "tiny", "fallback.batch_size=0"],
     "error: key 'fallback.batch_size' must be an integer >= 1, got 0 in override "
     "'fallback.batch_size=0' (e.g. fallback.batch_size=16)"),
    (["nano3", "pipe", "-c", "tiny", "pretrain.fallback.max_steps=0", "--dry-run"],
     "error: stage pretrain: key 'fallback.max_steps' must be an integer >= 1, got 0 in override "
     "'fallback.max_steps=0' (e.g. fallback.max_steps=30)"),
])
def test_cli_refuses_before_anything_runs(tmp_path: Path, args: list[str], expected: str) -> None:
    proc = _cli(tmp_path, *args)
    assert proc.returncode == 2, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert proc.stderr.strip().startswith(expected) and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert not (tmp_path / "nhome" / "jobs").exists() or not any((tmp_path / "nhome" / "jobs").iterdir())


def test_cli_names_the_yaml_line_and_refuses_submission(tmp_path: Path) -> None:
    mine = tmp_path / "mine.yaml"
    mine.write_text("defaults:\n  - tiny\nfallback:\n  max_steps: abc\n")
    env = tmp_path / "env.toml"
    env.write_text('[c]\nexecutor = "slurm"\naccount = "a"\npartition = "p"\ncontainer_image = ""\n')
    for extra in ([], ["--batch", "c", "--dry-run"]):
        proc = _cli(tmp_path, "nano3", "pretrain", "-c", str(mine), *extra, "--env-file", str(env))
        assert proc.returncode == 2, proc.stderr
        assert proc.stderr.strip() == (f"error: {mine}:4: key 'fallback.max_steps' must be an integer >= 1, "
                                       "got string 'abc' (e.g. fallback.max_steps: 30)")


@pytest.mark.parametrize(("script", "text", "expected"), [
    ("stage0_pretrain/train.py", "fallback:\n  enabled: true\n  max_steps: 2.5\n",
     "{cfg}:3: key 'fallback.max_steps' must be an integer >= 1, got 2.5"),
    ("stage1_sft/train.py", "fallback:\n  enabled: true\n  lr: abc\n",
     "{cfg}:3: key 'fallback.lr' must be a number > 0, got string 'abc'"),
    ("eval/eval.py", "fallback:\n  enabled: true\n  batch_size: abc\n",
     "{cfg}:3: key 'fallback.batch_size' must be an integer >= 1, got string 'abc'"),
])
def test_the_job_refuses_a_hand_edited_train_yaml(tmp_path: Path, script: str, text: str, expected: str) -> None:
    cfg = tmp_path / "train.yaml"
    cfg.write_text(text)
    proc = subprocess.run([sys.executable, str(RECIPES_DIR / "nano3" / script), "--config", str(cfg)], cwd=tmp_path,
                          capture_output=True, text=True, timeout=180, stdin=subprocess.DEVNULL,
                          env={**os.environ, "NEMOTRON_HOME": str(tmp_path / "h")})
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stderr.strip().startswith("error: " + expected.format(cfg=cfg)), proc.stderr
    assert "Traceback" not in proc.stderr


def test_an_interpolated_value_is_checked_in_the_job(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="key 'fallback.max_steps' must be an integer >= 1, got string 'abc'"):
        schema.fallback_settings({"max_steps": "abc"})
    assert schema.fallback_settings({"max_steps": 4}).max_steps == 4
