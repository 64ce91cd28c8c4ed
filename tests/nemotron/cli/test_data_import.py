"""`nemotron nano3 data import pretrain|sft|rl`: layout checks and registration, on real data-prep output."""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from nemo_runspec.artifacts.registry import get_registry, set_registry
from nemotron.cli.commands.nano3.data.import_ import app
from nemotron.data_prep.pretrain import run_pretrain
from nemotron.data_prep.rl import run_rl
from nemotron.data_prep.sft import run_sft
from nemotron.data_prep.tokenizer import train_tokenizer
from tests.nemotron_cli import NEMOTRON

WORDS = "alpha beta gamma delta river stone cloud paper light north quick brown fox".split()
runner = CliRunner()


def sentences(n: int, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    return [f"s{i} " + " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 20))) for i in range(n)]


def jsonl(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> dict[str, Path]:
    """Real, tiny outputs of the three data preps (no Ray: workers=0)."""
    base = tmp_path_factory.mktemp("prep")
    texts = sentences(150, seed=1)
    tok = train_tokenizer(texts, base / "tok", vocab_size=300)
    common = {"tokenizer": {"path": str(tok)}, "workers": 0, "num_shards": 2}
    run_pretrain({**common, "input": {"paths": [str(jsonl(base / "p.jsonl", [{"text": t} for t in texts]))]},
                  "output_dir": str(base / "pretrain"), "split": "80,10,10"})
    conv = [{"messages": [{"role": "user", "content": t}, {"role": "assistant", "content": t[::-1]}]}
            for t in texts]
    run_sft({**common, "input": {"paths": [str(jsonl(base / "s.jsonl", conv))]},
             "output_dir": str(base / "sft"), "pack_size": 128, "split": "80,10,10"})
    qa = [{"prompt": f"What is {i} + {i}?", "answer": 2 * i} for i in range(80)]
    run_rl({"input": {"paths": [str(jsonl(base / "r.jsonl", qa))]}, "output_dir": str(base / "rl"),
            "workers": 0, "num_shards": 2, "split": "80,20"})
    return {"pretrain": base / "pretrain", "sft": base / "sft", "rl": base / "rl"}


@pytest.fixture(autouse=True)
def registry_root(tmp_path, monkeypatch) -> Path:
    root = tmp_path / "registry"
    monkeypatch.setenv("NEMOTRON_ARTIFACTS_ROOT", str(root))
    monkeypatch.delenv("NEMOTRON_DEBUG", raising=False)
    monkeypatch.setenv("COLUMNS", "200")
    set_registry(None)
    yield root
    set_registry(None)


def copy_of(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns(".done", "shards"))
    blend = dst / "blend.json"
    if blend.is_file():  # absolute prefixes: point them at the copy
        blend.write_text(blend.read_text().replace(str(src.resolve()), str(dst.resolve())))
    return dst


def invoke(*args: str):
    return runner.invoke(app, [str(a) for a in args])


@pytest.mark.parametrize("kind,default", [("pretrain", "nano3-pretrain-data"), ("sft", "nano3-sft-data"),
                                          ("rl", "nano3-rl-data")])
def test_import_registers_default_name(kind, default, data):
    res = invoke(kind, data[kind])
    assert res.exit_code == 0, res.output
    art = get_registry().resolve(f"{default}:latest")
    assert art.version == 1 and Path(art.path) == data[kind].resolve()
    assert f"artifact: {default}:v1" in res.stdout
    assert f"path: {art.path}" in res.stdout
    assert art.metadata["kind"] == kind and art.metadata["imported_from"] == str(data[kind].resolve())


def test_pretrain_metadata_counts_match_disk(data):
    res = invoke("pretrain", data["pretrain"], "--name", "my-pre", "--alias", "tiny", "--alias", "v-good")
    assert res.exit_code == 0, res.output
    reg = get_registry()
    art = reg.resolve("my-pre:tiny")
    assert reg.resolve("my-pre:latest").version == art.version == reg.resolve("my-pre:v-good").version
    blend = json.loads((data["pretrain"] / "blend.json").read_text())
    n_prefixes = sum(len(v) // 2 for v in blend.values() if v)
    assert art.metadata["prefixes"] == n_prefixes > 0
    assert art.metadata["bin_bytes"] == sum(p.stat().st_size for p in data["pretrain"].rglob("*.bin"))


def test_sft_and_rl_counts_match_disk(data):
    import pyarrow.parquet as pq

    assert invoke("sft", data["sft"]).exit_code == 0
    art = get_registry().resolve("nano3-sft-data:latest")
    rows = sum(pq.ParquetFile(f).metadata.num_rows for f in (data["sft"] / "train").glob("*.parquet"))
    assert art.metadata["packs"]["train"] == rows > 0
    assert invoke("rl", data["rl"]).exit_code == 0
    art = get_registry().resolve("nano3-rl-data:latest")
    lines = len((data["rl"] / "validation.jsonl").read_text().splitlines())
    assert art.metadata["records"]["validation"] == lines


def test_copy_puts_payload_in_registry(data, registry_root):
    res = invoke("rl", data["rl"], "--copy")
    assert res.exit_code == 0, res.output
    art = get_registry().resolve("nano3-rl-data:v1")
    assert Path(art.path).is_relative_to(registry_root)
    assert (Path(art.path) / "train.jsonl").read_bytes() == (data["rl"] / "train.jsonl").read_bytes()


def test_second_import_is_next_version(data):
    assert invoke("rl", data["rl"]).exit_code == 0
    assert invoke("rl", data["rl"]).exit_code == 0
    assert get_registry().resolve("nano3-rl-data:latest").version == 2


def test_pretrain_relative_prefixes_resolved_against_path(data, tmp_path):
    d = copy_of(data["pretrain"], tmp_path / "pre")
    blend = json.loads((d / "blend.json").read_text())
    rel = {s: (None if v is None else [x if i % 2 == 0 else str(Path(x).relative_to(d.resolve()))
                                       for i, x in enumerate(v)]) for s, v in blend.items()}
    (d / "blend.json").write_text(json.dumps(rel))
    res = invoke("pretrain", d)
    assert res.exit_code == 0, res.output


def test_pretrain_bare_directory_gets_generated_blend(data, tmp_path):
    d = copy_of(data["pretrain"], tmp_path / "bare")
    (d / "blend.json").unlink()
    res = invoke("pretrain", d)
    assert res.exit_code == 0, res.output
    assert "note: wrote" in res.stdout
    blend = json.loads((d / "blend.json").read_text())
    bins = sorted(str(p.with_suffix("")) for p in d.rglob("*.bin"))
    listed = sorted(x for v in blend.values() if v for x in v[1::2])
    assert listed == bins
    for split in ("train", "valid", "test"):
        for prefix in (blend[split] or [])[1::2]:
            assert Path(prefix).parent.name == split


@pytest.mark.parametrize(
    "kind,breakage,needle",
    [
        ("pretrain", lambda d: [p.unlink() for p in d.rglob("*.bin")] and (d / "blend.json").unlink(),
         "missing blend.json"),
        ("pretrain", lambda d: next(d.rglob("*.idx")).unlink(), ".idx"),
        ("pretrain", lambda d: (d / "blend.json").write_text('{"train": ["1"'), "invalid JSON"),
        ("pretrain", lambda d: (d / "blend.json").write_text('{"train": ["x", "a"]}'), "weight 'x'"),
        ("sft", lambda d: (d / "metadata.json").unlink(), "missing metadata.json"),
        ("sft", lambda d: shutil.rmtree(d / "train"), "missing train/shard_*.parquet"),
        ("sft", lambda d: next((d / "train").glob("*.parquet")).write_bytes(b"nope"), "not a Parquet file"),
        ("rl", lambda d: (d / "validation.jsonl").unlink(), "missing validation.jsonl"),
        ("rl", lambda d: (d / "train.jsonl").write_text('{"prompt": "x"}\n'), "no 'messages' list"),
    ],
)
def test_bad_layouts_are_one_line_errors(kind, breakage, needle, data, tmp_path, registry_root):
    d = copy_of(data[kind], tmp_path / "broken")
    breakage(d)
    res = invoke(kind, d)
    assert res.exit_code == 2
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and needle in lines[0]
    assert str(d) in lines[0]
    assert not registry_root.exists() or not any(registry_root.rglob("v*.json"))


def test_missing_path_and_file_path(tmp_path):
    res = invoke("rl", tmp_path / "nope")
    assert res.exit_code == 2 and "no such directory" in res.stderr
    f = tmp_path / "f.txt"
    f.write_text("x")
    res = invoke("sft", f)
    assert res.exit_code == 2 and "not a directory" in res.stderr


def test_bad_artifact_name_is_an_error(data):
    res = invoke("rl", data["rl"], "--name", "bad name!")
    assert res.exit_code == 2 and "invalid artifact name" in res.stderr


def test_subprocess_help_and_run_without_pydantic(data, registry_root):
    code = (
        "import sys\n"
        "from nemotron.cli.commands.nano3.data.import_ import app\n"
        "try:\n    app(sys.argv[1:], prog_name='import')\n"
        "except SystemExit as e:\n    code = e.code\n"
        "print('PYDANTIC=' + str('pydantic' in sys.modules), file=sys.stderr)\n"
        "sys.exit(code)\n"
    )
    env = {**os.environ, "NEMOTRON_ARTIFACTS_ROOT": str(registry_root), "COLUMNS": "200"}
    for args in (["--help"], ["rl", "--help"]):
        proc = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, env=env,
                              timeout=120)
        assert proc.returncode == 0 and "Usage" in proc.stdout
        assert "PYDANTIC=False" in proc.stderr
    proc = subprocess.run([sys.executable, "-c", code, "rl", str(data["rl"]), "--alias", "x"],
                          capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "PYDANTIC=False" in proc.stderr
    assert (registry_root / "nano3-rl-data" / "v1.json").is_file()
    assert json.loads((registry_root / "nano3-rl-data" / "aliases.json").read_text()) == {"latest": 1, "x": 1}


def test_global_dry_run_checks_and_registers_nothing(data, tmp_path, registry_root):
    from nemo_runspec.cmdline.context import GlobalContext

    assert invoke("rl", data["rl"]).exit_code == 0
    before = sorted(registry_root.rglob("*.json"))
    res = runner.invoke(app, ["rl", str(data["rl"]), "--alias", "x"], obj=GlobalContext(dry_run=True))
    assert res.exit_code == 0, res.output
    assert "would register it as nano3-rl-data:v2 (aliases: latest, x) by reference; nothing was written" in res.stdout
    assert sorted(registry_root.rglob("*.json")) == before
    d = copy_of(data["pretrain"], tmp_path / "bare")
    (d / "blend.json").unlink()
    res = runner.invoke(app, ["pretrain", str(d)], obj=GlobalContext(dry_run=True))
    assert res.exit_code == 0, res.output
    assert "note: would write" in res.stdout and not (d / "blend.json").exists()
    res = runner.invoke(app, ["rl", str(tmp_path)], obj=GlobalContext(dry_run=True))
    assert res.exit_code == 2 and "missing train.jsonl" in res.stderr


def test_env_file_given_to_nemotron_picks_the_registry(data, tmp_path, monkeypatch):
    """`nemotron --env-file X nano3 data import ...` publishes to X's [artifacts] root."""
    root = tmp_path / "from-env-file"
    env_toml = tmp_path / "cfg" / "env.toml"  # not found from the cwd: only --env-file names it
    env_toml.parent.mkdir()
    env_toml.write_text(f'[artifacts]\nbackend = "file"\nroot = "{root}"\n')
    env = {k: v for k, v in os.environ.items() if not k.startswith("NEMOTRON_")}
    env.update(NEMOTRON_HOME=str(tmp_path / "home"), COLUMNS="200")
    proc = subprocess.run([str(NEMOTRON), "--env-file", str(env_toml),
                           "nano3", "data", "import", "rl", str(data["rl"])], capture_output=True, text=True,
                          env=env, cwd=tmp_path, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert (root / "nano3-rl-data" / "v1.json").is_file()


def test_sft_import_publishes_the_packed_specs_the_sft_config_reads(data, tmp_path):
    """An imported SFT dir carries Megatron-Bridge's PackedSequenceSpecs like a data-prep
    output does; without its packed/*.npy files it is refused before anything is registered."""
    from omegaconf import OmegaConf

    from nemo_runspec.config.resolvers import register_resolvers

    assert invoke("sft", data["sft"]).exit_code == 0
    art = get_registry().resolve("nano3-sft-data:latest")
    specs = art.metadata["packed_sequence_specs"]
    assert specs["packed_sequence_size"] == 128
    for key in ("packed_train_data_path", "packed_val_data_path", "packed_metadata_path"):
        assert (Path(art.path) / specs[key]).is_file(), key
    # the native SFT config resolves against the import exactly as against a data prep
    register_resolvers()
    cfg = OmegaConf.load(Path(__file__).resolve().parents[3] / "src/nemotron/recipes/nano3/stage1_sft/config/default.yaml")
    cfg.run.data = "nano3-sft-data:latest"
    assert Path(cfg.data.packed_sequence_specs.packed_train_data_path) == Path(art.path) / "packed" / "train.npy"

    broken = copy_of(data["sft"], tmp_path / "no-packed")
    shutil.rmtree(broken / "packed")
    res = invoke("sft", broken, "--name", "broken-sft")
    assert res.exit_code != 0 and "packed/train.npy" in res.output and "data prep sft" in res.output
    with pytest.raises(Exception):  # noqa: B017 - nothing registered
        get_registry().resolve("broken-sft:latest")
