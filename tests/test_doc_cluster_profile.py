"""The test-cluster profile that docs/dev/slurm-cluster.md ships loads as written, with
the values the local cluster needs (scripts/slurm-cluster.sh sets them up)."""

from __future__ import annotations

import re
from pathlib import Path

from nemo_runspec.env import load_env_profile

DOC = Path(__file__).resolve().parents[1] / "docs" / "dev" / "slurm-cluster.md"


def test_the_documented_profile_loads(tmp_path):
    section = DOC.read_text().split("## A profile for it", 1)[1]
    toml = re.search(r"```toml\n(.*?)```", section, re.S).group(1)
    path = tmp_path / "env.toml"
    path.write_text(toml)
    local, ssh = load_env_profile("cluster", path), load_env_profile("cluster-ssh", path)
    assert (local["account"], local["partition"], local["tunnel"]) == ("testacct", "debug", "local")
    assert (ssh["tunnel"], ssh["port"], ssh["account"]) == ("ssh", 2222, "testacct")  # extends cluster
