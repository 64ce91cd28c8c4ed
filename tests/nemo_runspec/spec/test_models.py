"""The parsed ``[tool.runspec]`` records (_models.py): paths resolved against the script, an
environment that cannot be changed, pickling (Ray, multiprocessing) and the plain-dict form."""

from __future__ import annotations

import json
import pickle
from pathlib import Path

import pytest

from nemo_runspec.spec.models import Runspec, RunspecConfig, RunspecResources, RunspecRun


def test_paths_are_absolute_and_config_dir_is_beside_the_script(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    spec = Runspec(name="t/train", script_path=Path("recipes/train.py"), config=RunspecConfig(dir="../configs"))
    assert spec.script_path == tmp_path / "recipes" / "train.py"
    assert spec.config_dir == tmp_path / "configs"


def test_the_environment_is_read_only_and_survives_pickling(tmp_path):
    spec = Runspec(name="t/train", script_path=tmp_path / "train.py", env={"A": "1"},
                   run=RunspecRun(launch="ray", setup=("module load x", "export B=2")))
    with pytest.raises(TypeError):
        spec.env["A"] = "2"  # type: ignore[index]
    again = pickle.loads(pickle.dumps(spec))
    assert again == spec and dict(again.env) == {"A": "1"} and again.config_dir == spec.config_dir


def test_the_plain_dict_form_is_json():
    spec = Runspec(name="t/train", script_path=Path("/r/train.py"), image="img:1",
                   run=RunspecRun(setup=("a", "b")), resources=RunspecResources(nodes=2, gpus_per_node=None))
    data = json.loads(json.dumps(spec.to_dict()))
    assert data["run"] == {"launch": "torchrun", "cmd": None, "workdir": None, "setup": ["a", "b"]}
    assert data["resources"] == {"nodes": 2, "gpus_per_node": None}
    assert data["config"] == {"dir": "./config", "default": "default", "format": "omegaconf"}
    assert (data["script_path"], data["config_dir"], data["image"]) == ("/r/train.py", "/r/config", "img:1")
    assert "scales" not in data


def test_setup_is_one_script_of_its_commands():
    assert RunspecRun(setup=("a", "b")).setup_script == "a\nb"
    assert RunspecRun().setup_script == ""
