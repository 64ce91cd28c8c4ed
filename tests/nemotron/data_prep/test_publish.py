"""Data prep publishing goes through nemo_runspec.artifacts.registry.get_registry()."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from nemo_runspec.artifacts.registry import get_registry, set_registry
from nemotron.data_prep.pretrain import run_pretrain
from nemotron.data_prep.tokenizer import train_tokenizer

NAME = "nano3-pretrain-data-tiny"
WORDS = "alpha beta gamma delta river stone cloud paper light north quick brown fox".split()


def docs(n: int, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    return [f"doc {i} " + " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 40))) for i in range(n)]


@pytest.fixture(scope="module")
def tok_dir(tmp_path_factory) -> Path:
    return train_tokenizer(docs(200, seed=3), tmp_path_factory.mktemp("tok") / "tok", vocab_size=300)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("corpus") / "c.jsonl"
    path.write_text("".join(json.dumps({"text": d}) + "\n" for d in docs(120)))
    return path


@pytest.fixture(autouse=True)
def _fresh_registry(monkeypatch, tmp_path):
    for var in ("NEMOTRON_ARTIFACTS_ROOT", "NEMOTRON_ENV_FILE", "RANK", "SLURM_PROCID",
                "OMPI_COMM_WORLD_RANK", "PMIX_RANK"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("NEMOTRON_HOME", str(tmp_path / "home"))
    # a project root without env.toml: discovery must not find the repo's env.toml
    (tmp_path / "proj").mkdir()
    (tmp_path / "proj" / ".git").mkdir()
    monkeypatch.chdir(tmp_path / "proj")
    set_registry(None)
    yield
    set_registry(None)


def cfg_for(corpus: Path, tok: Path, out: Path, **publish) -> dict:
    return {"input": {"paths": [str(corpus)]}, "tokenizer": {"path": str(tok)}, "output_dir": str(out),
            "num_shards": 2, "split": "80,10,10", "workers": 0, "sample": 60,
            "publish": {"name": NAME, **publish}}


def bin_tokens(out: Path) -> int:
    """Tokens on disk, counted from the .bin sizes and the dtype in metadata.json."""
    dtype = np.dtype(json.loads((out / "metadata.json").read_text())["dtype"])
    return sum(p.stat().st_size for p in out.rglob("*.bin")) // dtype.itemsize


def test_publishes_to_root_from_env_var(tmp_path, monkeypatch, corpus, tok_dir, capsys):
    root = tmp_path / "registry"
    monkeypatch.setenv("NEMOTRON_ARTIFACTS_ROOT", str(root))
    out = tmp_path / "out"
    summary = run_pretrain(cfg_for(corpus, tok_dir, out))
    art = get_registry().resolve(f"{NAME}:latest")
    assert art.version == 1
    assert Path(art.path) == out.resolve()
    assert (Path(art.path) / "blend.json").is_file()
    # the record lives under the env-var root, not under $NEMOTRON_HOME
    assert (root / NAME / "v1.json").is_file()
    assert not (tmp_path / "home" / "artifacts").exists()
    # metadata: token and record counts that match what is on disk
    assert art.metadata["tokens"] == bin_tokens(out) > 0
    assert art.metadata["records"] == 60 == summary["records"]
    assert art.metadata["blend_path"] == str(out / "blend.json")
    printed = capsys.readouterr().out
    assert f"published {NAME}:v1" in printed and str(root) in printed


def test_second_run_is_a_new_version_and_copy_works(tmp_path, monkeypatch, corpus, tok_dir):
    monkeypatch.setenv("NEMOTRON_ARTIFACTS_ROOT", str(tmp_path / "registry"))
    run_pretrain(cfg_for(corpus, tok_dir, tmp_path / "out"))
    run_pretrain(cfg_for(corpus, tok_dir, tmp_path / "out", copy=True, aliases=["latest", "tiny"]))
    reg = get_registry()
    latest = reg.resolve(f"{NAME}:latest")
    assert latest.version == 2 == reg.resolve(f"{NAME}:tiny").version
    assert Path(latest.path) == tmp_path / "registry" / NAME / "v2"
    assert (Path(latest.path) / "blend.json").is_file()
    assert reg.resolve(f"{NAME}:v1").path == str((tmp_path / "out").resolve())


def test_env_toml_artifacts_section_used_without_env_var(tmp_path, corpus, tok_dir):
    root = tmp_path / "from-env-toml"
    (tmp_path / "proj" / "env.toml").write_text(f'[artifacts]\nroot = "{root}"\n')
    run_pretrain(cfg_for(corpus, tok_dir, tmp_path / "out"))
    assert (root / NAME / "v1.json").is_file()
    assert (Path(get_registry().resolve(f"{NAME}:latest").path) / "blend.json").is_file()


def test_env_var_beats_env_toml(tmp_path, monkeypatch, corpus, tok_dir):
    (tmp_path / "proj" / "env.toml").write_text(f'[artifacts]\nroot = "{tmp_path / "toml-root"}"\n')
    monkeypatch.setenv("NEMOTRON_ARTIFACTS_ROOT", str(tmp_path / "var-root"))
    run_pretrain(cfg_for(corpus, tok_dir, tmp_path / "out"))
    assert (tmp_path / "var-root" / NAME / "v1.json").is_file()
    assert not (tmp_path / "toml-root").exists()


def test_default_is_nemotron_home(tmp_path, corpus, tok_dir):
    run_pretrain(cfg_for(corpus, tok_dir, tmp_path / "out"))
    assert (tmp_path / "home" / "artifacts" / NAME / "v1.json").is_file()


def test_only_rank_zero_publishes(tmp_path, monkeypatch, corpus, tok_dir):
    root = tmp_path / "registry"
    monkeypatch.setenv("NEMOTRON_ARTIFACTS_ROOT", str(root))
    monkeypatch.setenv("SLURM_PROCID", "1")
    run_pretrain(cfg_for(corpus, tok_dir, tmp_path / "out"))
    assert not (root / NAME).exists()


def test_no_publish_name_publishes_nothing(tmp_path, monkeypatch, corpus, tok_dir):
    root = tmp_path / "registry"
    monkeypatch.setenv("NEMOTRON_ARTIFACTS_ROOT", str(root))
    cfg = cfg_for(corpus, tok_dir, tmp_path / "out")
    cfg["publish"] = {}
    run_pretrain(cfg)
    assert not root.exists()


def test_data_prep_script_in_a_subprocess_publishes_where_the_launcher_says(tmp_path, corpus, tok_dir):
    """As in a Slurm job: a fresh process whose only hint is NEMOTRON_ARTIFACTS_ROOT."""
    root = tmp_path / "registry"
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text(json.dumps(cfg_for(corpus, tok_dir, tmp_path / "out")))
    env = {**os.environ, "NEMOTRON_ARTIFACTS_ROOT": str(root), "NEMOTRON_HOME": str(tmp_path / "home")}
    code = "import sys; from nemotron.data_prep.cli import main; sys.exit(main('pretrain', sys.argv[1:]))"
    proc = subprocess.run([sys.executable, "-c", code, "--config", str(cfg)], capture_output=True, text=True,
                          env=env, cwd=tmp_path / "proj", timeout=300)
    assert proc.returncode == 0, proc.stderr
    record = json.loads((root / NAME / "v1.json").read_text())
    assert record["path"] == str((tmp_path / "out").resolve())
    assert record["metadata"]["tokens"] == bin_tokens(tmp_path / "out")


def test_published_versions_are_not_overwritten_by_a_later_run(corpus, tok_dir, tmp_path, monkeypatch):
    """Default output dirs carry a content key: v1's files survive a run with another config."""
    monkeypatch.setenv("NEMOTRON_ARTIFACTS_ROOT", str(tmp_path / "reg"))
    base = {"input": {"paths": [str(corpus)]}, "tokenizer": {"path": str(tok_dir)}, "name": "ds",
            "split": "80,10,10", "workers": 0, "publish": {"name": NAME}}
    run_pretrain({**base, "num_shards": 3})
    v1 = get_registry().resolve(f"{NAME}:v1")
    before = {p.relative_to(v1.path): p.read_bytes() for p in Path(v1.path).rglob("*") if p.is_file()}
    run_pretrain({**base, "num_shards": 2})
    v2 = get_registry().resolve(f"{NAME}:v2")
    assert v1.path != v2.path
    after = {p.relative_to(v1.path): p.read_bytes() for p in Path(v1.path).rglob("*") if p.is_file()}
    assert after == before
    assert Path(v1.path).parent == Path(v2.path).parent == tmp_path / "home" / "data" / "ds"


def test_content_key_ignores_where_the_same_input_lives(corpus, tok_dir, tmp_path):
    """A packaged job sees the inputs under another path: same data, same directory."""
    import shutil

    from nemotron.data_prep.common import make_plan

    moved = tmp_path / "code" / "elsewhere" / corpus.name
    moved.parent.mkdir(parents=True)
    shutil.copy2(corpus, moved)
    base = {"tokenizer": {"path": str(tok_dir)}, "name": "ds", "num_shards": 2}
    with make_plan({**base, "input": {"paths": [str(corpus)]}}, "pretrain", "x") as a:
        pass
    with make_plan({**base, "input": {"paths": [str(moved)]}}, "pretrain", "x") as b:
        pass
    assert a.out_dir == b.out_dir
    moved.write_text(moved.read_text().replace("alpha", "omega"))  # other content: other key
    with make_plan({**base, "input": {"paths": [str(moved)]}}, "pretrain", "x") as c:
        pass
    assert c.out_dir != a.out_dir
