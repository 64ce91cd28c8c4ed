"""A job's identity from its saved job.yaml and packaging.json (report/identity.py)."""

from __future__ import annotations

import json

from nemo_runspec.report.identity import code_of, from_job_yaml
from nemo_runspec.report.model import ArtifactLink, Identity, Setting

JOB_YAML = """\
run:
  cli: {argv: [nano3, pretrain, -c, tiny, "train.lr=1e-4"], config: tiny, overrides: ["train.lr=1e-4"]}
  recipe: {name: nano3/pretrain}
  profile: dgx
  env: {nodes: 2, container_image: "nvcr.io/x:1", mounts: ["/a:/a"], ray: {head: {cpus: 4}}, detach: true}
  env_sources: {nodes: "env.toml:4", container_image: "runspec", ray: "env.toml:9"}
  data: nano3-data:latest
  unused: other:v1
  provenance: {host: login1}
data: {path: "${art:data,path}"}
"""


def test_the_identity_a_job_yaml_records():
    ident = from_job_yaml(JOB_YAML)
    assert ident.command == "nemotron nano3 pretrain -c tiny train.lr=1e-4"
    assert (ident.recipe, ident.config, ident.overrides, ident.profile, ident.image) == (
        "nano3/pretrain", "tiny", ["train.lr=1e-4"], "dgx", "nvcr.io/x:1")
    assert ident.settings == [
        Setting("container_image", "nvcr.io/x:1", "runspec"), Setting("detach", "true", ""),
        Setting("mounts", '["/a:/a"]', ""), Setting("nodes", "2", "env.toml:4"),
        Setting("ray.head.cpus", "4", "env.toml:9")]
    assert ident.consumed == [ArtifactLink(ref="nano3-data:latest", key="data")]  # only keys the config uses
    assert ident.provenance == {"host": "login1"}


def test_an_empty_or_odd_job_yaml_is_an_empty_identity():
    assert from_job_yaml("") == Identity()
    assert from_job_yaml("- a list\n") == Identity()


def test_code_of_keeps_the_fields_a_report_shows(tmp_path):
    p = tmp_path / "packaging.json"
    p.write_text(json.dumps({"kind": "git", "commit": "abc", "dirty": False, "branch": "", "files": [1, 2]}))
    assert code_of(p) == {"commit": "abc", "dirty": False, "kind": "git"}
    assert code_of(tmp_path / "missing.json") == {}
    (tmp_path / "bad.json").write_text("[1]")
    assert code_of(tmp_path / "bad.json") == {}
