"""A native job in an image with the wrong library version ends in seconds with one line.

The real ``train.py`` runs in the test venv with stand-in ``megatron.bridge`` /
``nemo_rl`` packages first on ``PYTHONPATH``: a ``package_info.py`` with the version, and
an ``__init__`` that raises if anything imports it (nor may ``transformer_engine``): the
check must read the version without importing the library, before any model is built.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from nemo_runspec.errors import ConfigError
from nemotron.training import version_check as vc

ROOT = Path(__file__).resolve().parents[3]
RECIPES = ROOT / "src/nemotron/recipes/nano3"
TRAIN = {"pretrain": RECIPES / "stage0_pretrain/train.py", "sft": RECIPES / "stage1_sft/train.py",
         "rl": RECIPES / "stage2_rl/train.py", "convert": RECIPES / "stage1_sft/convert.py"}
CONFIG = {"pretrain": RECIPES / "stage0_pretrain/config", "sft": RECIPES / "stage1_sft/config",
          "rl": RECIPES / "stage2_rl/config", "convert": RECIPES / "stage1_sft/config/convert"}
TRAP = "raise RuntimeError('imported {0}: the version check must not import it')\n"


def _stand_ins(root: Path, package: str, version: tuple[int, int, int, str]) -> Path:
    """``package`` (dotted) with ``package_info.py`` saying ``version``; importing it raises."""
    pkg = root.joinpath(*package.split("."))
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text(TRAP.format(package))
    major, minor, patch, pre = version
    (pkg / "package_info.py").write_text(f"MAJOR = {major}\nMINOR = {minor}\nPATCH = {patch}\nPRE_RELEASE = {pre!r}\n")
    te = root / "transformer_engine"
    if not te.exists():
        te.mkdir()
        (te / "__init__.py").write_text(TRAP.format("transformer_engine"))
    return root


def _run(kind: str, tmp_path: Path, site: Path, config: str = "default", **env_overrides: str) \
        -> tuple[subprocess.CompletedProcess[str], float]:
    cfg = yaml.safe_load((CONFIG[kind] / f"{config}.yaml").read_text())
    cfg.setdefault("run", {})["env"] = {"container_image": env_overrides.pop("image")}
    path = tmp_path / "train.yaml"
    path.write_text(yaml.safe_dump(cfg))
    env = {k: v for k, v in os.environ.items() if not k.startswith("NEMOTRON_")}
    env.update(PYTHONPATH=str(site), NEMOTRON_HOME=str(tmp_path / "home"), **env_overrides)
    started = time.monotonic()
    r = subprocess.run([sys.executable, str(TRAIN[kind]), "--config", str(path)], cwd=tmp_path, env=env,
                       capture_output=True, text=True, timeout=120)
    return r, time.monotonic() - started


def test_a_wrong_megatron_bridge_ends_the_sft_job_in_seconds_with_one_line(tmp_path):
    site = _stand_ins(tmp_path / "site", "megatron.bridge", (0, 2, 0, ""))
    r, seconds = _run("sft", tmp_path, site, image="nvcr.io/nvidia/nemo:25.11.nemotron_3_nano")
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith("error: nano3/sft: image nvcr.io/nvidia/nemo:25.11.nemotron_3_nano has "
                               "megatron-bridge 0.2.0; this recipe supports megatron-bridge 0.3.0rc0 to 0.6.x")
    assert "run it in nvcr.io/nvidia/nemo:26.08 (run.env.container_image=IMAGE" in lines[0]
    assert "-c tiny" in lines[0] and "imported" not in r.stderr and "Traceback" not in r.stderr
    assert seconds < 20, seconds  # measured about 2 s: no import of the library, no model


def test_a_wrong_megatron_bridge_ends_the_convert_job_in_seconds(tmp_path):
    """The export runs in the same image line as SFT: its job checks the installed release first too."""
    site = _stand_ins(tmp_path / "site", "megatron.bridge", (0, 2, 0, ""))
    r, seconds = _run("convert", tmp_path, site, image="nvcr.io/nvidia/nemo:25.11.nemotron_3_nano")
    assert r.returncode == 2 and r.stderr.strip().splitlines() == [r.stderr.strip()], r.stderr
    assert r.stderr.startswith("error: nano3/convert: image nvcr.io/nvidia/nemo:25.11.nemotron_3_nano has "
                               "megatron-bridge 0.2.0; this recipe supports megatron-bridge 0.3.0rc0 to 0.6.x")
    assert "imported" not in r.stderr and seconds < 20, seconds


def test_an_image_not_for_the_stage_names_the_images_to_use(tmp_path):
    site = _stand_ins(tmp_path / "site", "megatron.bridge", (0, 2, 0, ""))
    r, _ = _run("pretrain", tmp_path, site, image="nvcr.io#nvidia/nemo:25.11")
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert "image nvcr.io/nvidia/nemo:25.11 is not for this recipe: its megatron-bridge 0.2.0 has no Nemotron 3 " \
           "Nano recipe" in r.stderr
    assert "run it in nvcr.io/nvidia/nemo:25.11.nemotron_3_nano or nvcr.io/nvidia/nemo:26.08" in r.stderr


def test_a_wrong_nemo_rl_ends_the_rl_job_in_seconds(tmp_path):
    site = _stand_ins(tmp_path / "site", "nemo_rl", (0, 3, 1, ""))
    r, seconds = _run("rl", tmp_path, site, image="nvcr.io/nvidia/nemo-rl:v0.4.0.nemotron_3_nano")
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert "has nemo-rl 0.3.1; this recipe supports nemo-rl 0.4.0 to 0.7.x" in r.stderr
    assert seconds < 20


def test_a_config_naming_a_recipe_the_release_lacks_is_a_config_fix(tmp_path):
    """The image is right (0.3.0rc0), the config names 0.3.1's function: the line names the key."""
    site = _stand_ins(tmp_path / "site", "megatron.bridge", (0, 3, 0, "rc0"))
    cfg = CONFIG["sft"] / "default.yaml"
    text = cfg.read_text().replace("_target_: null", "_target_: megatron.bridge.recipes.nemotronh.nemotron_3_nano."
                                                     "nemotron_3_nano_sft_config")
    (tmp_path / "conf").mkdir()
    (tmp_path / "conf" / "default.yaml").write_text(text)
    CONFIG["custom"] = tmp_path / "conf"
    TRAIN["custom"] = TRAIN["sft"]
    try:
        r, _ = _run("custom", tmp_path, site, image="nvcr.io/nvidia/nemo:25.11.nemotron_3_nano")
    finally:
        CONFIG.pop("custom"), TRAIN.pop("custom")
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert "recipe._target_ names nemotron_3_nano_sft_config, which megatron-bridge 0.3.0 (finetune_config) " \
           "does not have" in r.stderr and "recipe._target_=null" in r.stderr


# --- the decision, unit by unit (a fake installed version) -----------------------------


def _found(version: str) -> Any:
    return lambda dist: vc.Found(dist, version, "test")


def test_a_version_of_another_line_than_the_table_says_warns_and_adapts():
    cfg = {"run": {"env": {"container_image": "nvcr.io/nvidia/nemo:26.02"}}}
    line, messages = vc.check("sft", cfg, find=_found("0.3.1"))
    assert line.name.startswith("0.3.1") and messages == [
        "warning: nano3/sft: the compatibility table says nvcr.io/nvidia/nemo:26.02 has megatron-bridge 0.3.0, "
        "found 0.3.1: using the 0.3.1 (sft_config) API"]
    assert vc.check("sft", cfg, find=_found("0.3.0+abc"))[1] == []  # same line: silent


def test_an_unknown_image_notes_and_adapts_and_bare_metal_is_no_image():
    line, messages = vc.check("pretrain", {"run": {"env": {"container_image": "me/img:1"}}}, find=_found("0.6.1"))
    assert line.name.startswith("0.6") and "me/img:1 is not in the compatibility table" in messages[0]
    _, messages = vc.check("pretrain", {"run": {"env": {"container_image": "none"}}}, find=_found("0.4.0"))
    assert "this job (no container image) is not in the compatibility table" in messages[0]
    assert vc.check("pretrain", {}, find=lambda dist: None) == (None, [])  # not installed: the backend choice says so


def test_with_the_fallback_allowed_a_mismatch_is_a_note_and_the_fallback(monkeypatch, capsys):
    monkeypatch.setattr(vc, "check", lambda *a, **k: (_ for _ in ()).throw(ConfigError("nano3/sft: bad")))
    assert vc.gate("sft", {"fallback": {"enabled": "auto"}}, native_found=True) == "torch"
    assert "note: nano3/sft: bad; the config allows the CPU fallback" in capsys.readouterr().err
    with pytest.raises(ConfigError):
        vc.gate("sft", {"fallback": {"enabled": False}}, native_found=True)
    assert vc.gate("sft", {"backend": "torch"}, native_found=True) is None  # forced fallback: nothing checked
    assert vc.gate("sft", {}, native_found=False) is None  # not installed: the backend choice says so
    monkeypatch.setenv("RANK", "3")  # the same decision on every rank, said by rank 0 only
    assert vc.gate("sft", {"fallback": {"enabled": "auto"}}, native_found=True) == "torch"
    assert capsys.readouterr().err == ""


def test_installed_version_reads_package_info_without_importing(tmp_path, monkeypatch):
    site = _stand_ins(tmp_path, "megatron.bridge", (0, 6, 1, ""))
    monkeypatch.syspath_prepend(str(site))
    before = set(sys.modules)
    found = vc.installed_version("megatron-bridge")
    assert found.version == "0.6.1" and found.where == str(site / "megatron" / "bridge" / "package_info.py")
    assert not {m for m in set(sys.modules) - before if m.startswith(("megatron.bridge", "transformer_engine"))}
    assert vc.installed_version("no-such-distribution") is None


def test_preflight_reads_the_versions_the_job_reads(tmp_path, monkeypatch):
    """kit/preflight.py keeps its own copy of the reader (it ships alone, stdlib only): it must
    name the same libraries and find the same versions as the job's check (release.py)."""
    import importlib.util

    from nemotron.recipes import RECIPES_DIR
    from nemotron.training.release import MODULES

    spec = importlib.util.spec_from_file_location("preflight_alone", RECIPES_DIR / "kit" / "preflight.py")
    preflight = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(preflight)
    assert preflight.LIBRARIES == MODULES
    site = _stand_ins(tmp_path, "megatron.bridge", (0, 3, 0, "rc0"))
    _stand_ins(tmp_path, "nemo_rl", (0, 7, 0, ""))
    monkeypatch.syspath_prepend(str(site))
    for dist, module in MODULES.items():
        found = vc.installed_version(dist)
        assert preflight._library_version(dist, module) == (found.version if found else None), dist


def test_the_evaluator_line_is_the_launchers_0_2():
    vc.check_evaluator(find=lambda dist: vc.Found(dist, {"nemo-evaluator-launcher": "0.2.6",
                                                        "nemo-evaluator": "0.2.8"}[dist], "test"))
    vc.check_evaluator(find=lambda dist: None)  # not installed: the backend choice says so
    with pytest.raises(ConfigError, match="nemo-evaluator 0.3.0 is installed; .*replaced the launcher") as exc:
        vc.check_evaluator(find=lambda dist: vc.Found(dist, "0.3.0" if dist == "nemo-evaluator" else "0.2.6", "t"))
    assert "pip install 'nemo-evaluator-launcher>=0.2.6,<0.3'" in str(exc.value)
    with pytest.raises(ConfigError, match="nemo-evaluator-launcher 0.2.5 is installed"):
        vc.check_evaluator(find=lambda dist: vc.Found(dist, "0.2.5", "t"))
