"""The recipe repository the packager tests share: a real git repo with three recipe scripts."""

from __future__ import annotations

import pytest

from tests.nemo_runspec.packaging.git_repos import git, make_repo
from tests.nemo_runspec.packaging.test_select import write_script


@pytest.fixture
def repo(tmp_path):
    r = make_repo(tmp_path / "r")
    write_script(r / "src/proj/recipes/train.py", "import proj.util\nprint(proj.util.f())\n")
    write_script(r / "src/proj/recipes/standalone.py", "import json\nimport numpy\nprint(json.dumps([1]))\n")
    write_script(r / "src/proj/recipes/prep.py", "import json\n", launch="ray")
    git(r, "add", "-A")
    git(r, "commit", "-qm", "scripts")
    return r
