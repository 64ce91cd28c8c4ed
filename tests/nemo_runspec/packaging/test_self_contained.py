"""The self_contained packager (packaging/self_contained.py): script and config shipped, project imports found and refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from nemo_runspec import parse
from nemo_runspec.errors import PackagingError
from nemo_runspec.packaging.select import build_packager
from tests.nemo_runspec.packaging.git_repos import git, tar_contents
from tests.nemo_runspec.packaging.test_select import _home, write_script  # noqa: F401 - _home: its autouse NEMOTRON_HOME


def test_sibling_and_relative_imports_count_as_project_code(tmp_path):
    from nemo_runspec.packaging.self_contained import project_imports

    d = tmp_path / "plain"
    write_script(d / "main.py", "import os\n\ndef go():\n    import helpers\n    from . import x\n")
    (d / "helpers.py").write_text("")
    found = project_imports(d / "main.py")
    assert [(i.module, i.line) for i in found] == [("helpers", 11), (".", 12)]


def test_self_contained_ships_script_and_config(repo, tmp_path):
    spec = parse(repo / "src/proj/recipes/standalone.py")
    cfg = tmp_path / "train.yaml"
    cfg.write_text("lr: 0.1\n")
    packager, plan = build_packager({}, runspec=spec, script_path=spec.script_path, config_path=cfg)
    job = tmp_path / "job"
    job.mkdir()
    out = packager.package(Path("/"), str(job), "t")
    files = tar_contents(out)
    assert files == {"main.py": spec.script_path.read_bytes(), "config.yaml": b"lr: 0.1\n"}
    assert plan.kind == "self_contained" and plan.script == "main.py"
    assert plan.commit == git(repo, "rev-parse", "HEAD").strip() and plan.dirty is False


def test_self_contained_refuses_project_imports(repo, tmp_path):
    spec = parse(repo / "src/proj/recipes/train.py")
    packager, _ = build_packager({"packager": "self_contained"}, runspec=spec, script_path=spec.script_path)
    with pytest.raises(PackagingError) as ei:
        packager.package(Path("/"), str(tmp_path), "t")
    msg = str(ei.value)
    assert msg.startswith(f"{spec.script_path}:8:") and "'proj.util'" in msg and 'packager = "code"' in msg


def test_an_import_the_script_declares_optional_does_not_need_project_code(tmp_path):
    """An import in a try that catches ImportError does not keep a script from shipping
    alone; one in a try that catches something else still does."""
    from nemo_runspec.packaging.self_contained import project_imports

    d = tmp_path / "plain"
    write_script(d / "main.py", "def go():\n    try:\n        from helpers import row\n"
                                "    except ImportError:\n        return None\n"
                                "    try:\n        import helpers2\n    except (ValueError, ModuleNotFoundError):\n"
                                "        pass\n    try:\n        import helpers3\n    except OSError:\n"
                                "        pass\n")
    for name in ("helpers", "helpers2", "helpers3"):
        (d / f"{name}.py").write_text("")
    assert [i.module for i in project_imports(d / "main.py")] == ["helpers3"]
