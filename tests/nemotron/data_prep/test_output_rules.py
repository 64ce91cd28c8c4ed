"""Data prep never destroys or mixes data (issue 20), for each of the three kinds.

- it deletes only what its manifest says it wrote; anything else in the way is an error first;
- one writer per output dir: a real second process is refused naming the holder, a
  SIGKILLed holder is detected and its run repaired; temporary names are unique;
- an empty or near-empty result fails (``allow_empty`` allows it) and never moves ``latest``;
- faults (FIFO, unreadable input, full disk, a file as output dir, corrupt files) are one line;
- memory per record is bounded by ``max_record_bytes``;
- the content key covers every byte of every input, and a published dir is never rewritten.
"""

from __future__ import annotations

import json
import os
import random
import signal
import struct
import subprocess
import sys
import time
from pathlib import Path

import pytest

os.environ.setdefault("RAY_DISABLE_USAGE_STATS", "1")

from nemo_runspec.artifacts.registry import get_registry, set_registry  # noqa: E402
from nemo_runspec.errors import ConfigError, ExecutionError  # noqa: E402
from nemotron.data_prep.pretrain import run_pretrain  # noqa: E402
from nemotron.data_prep.rl import run_rl  # noqa: E402
from nemotron.data_prep.sft import run_sft  # noqa: E402
from nemotron.data_prep.tokenizer import train_tokenizer  # noqa: E402

ROOT = Path(__file__).resolve().parents[3]
KINDS = ("pretrain", "sft", "rl")
RUN = {"pretrain": run_pretrain, "sft": run_sft, "rl": run_rl}
WORDS = "alpha beta gamma delta river stone cloud paper light north quick brown fox what why how".split()
NAME = "rules-data"


def record(kind: str, i: int, rng: random.Random) -> dict:
    words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 20)))
    if kind == "pretrain":
        return {"text": f"doc {i} {words}"}
    if kind == "sft":
        return {"messages": [{"role": "user", "content": f"q{i} {words}"},
                             {"role": "assistant", "content": f"a{i} {words}"}]}
    return {"prompt": f"question {i}: {words}?", "answer": str(i)}


def write_records(path: Path, kind: str, n: int, seed: int = 0) -> Path:
    rng = random.Random(seed)
    path.write_text("".join(json.dumps(record(kind, i, rng)) + "\n" for i in range(n)))
    return path


@pytest.fixture(scope="module")
def tok_dir(tmp_path_factory) -> Path:
    rng = random.Random(1)
    texts = [" ".join(rng.choice(WORDS) for _ in range(30)) + f" q{i} a{i} doc {i}" for i in range(300)]
    return train_tokenizer(texts, tmp_path_factory.mktemp("tok") / "tok", vocab_size=400)


@pytest.fixture(autouse=True)
def _home(monkeypatch, tmp_path):
    for var in ("NEMOTRON_ENV_FILE", "RANK", "SLURM_PROCID", "OMPI_COMM_WORLD_RANK", "PMIX_RANK", "RAY_ADDRESS"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("NEMOTRON_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("NEMOTRON_ARTIFACTS_ROOT", str(tmp_path / "registry"))
    (tmp_path / "proj" / ".git").mkdir(parents=True)
    monkeypatch.chdir(tmp_path / "proj")
    set_registry(None)
    yield
    set_registry(None)


def cfg_for(kind: str, inputs: Path | list[Path], out: Path | None, tok: Path, **kw) -> dict:
    paths = [str(p) for p in (inputs if isinstance(inputs, list) else [inputs])]
    cfg: dict = {"input": {"paths": paths}, "workers": 0, "num_shards": 2,
                 "split": "80,20" if kind == "rl" else "80,10,10"}
    if out is not None:
        cfg["output_dir"] = str(out)
    if kind != "rl":
        cfg["tokenizer"] = {"path": str(tok)}
    if kind == "sft":
        cfg["pack_size"] = 256
    cfg.update(kw)
    return cfg


def cli(kind: str, cfg: dict, tmp_path: Path, *overrides: str, timeout: float = 120,
        **popen) -> subprocess.CompletedProcess:
    """The data-prep script's main() in a fresh process (as on a node)."""
    path = tmp_path / f"cfg-{kind}-{time.monotonic_ns()}.yaml"
    path.write_text(json.dumps(cfg))
    code = f"import sys; from nemotron.data_prep.cli import main; sys.exit(main({kind!r}, sys.argv[1:]))"
    return subprocess.run([sys.executable, "-c", code, "--config", str(path), *overrides], capture_output=True,
                          text=True, timeout=timeout, env={**os.environ, "NEMOTRON_DEBUG": ""}, **popen)


def assert_one_line_error(proc: subprocess.CompletedProcess, *must: str) -> None:
    err = proc.stderr.strip()
    assert proc.returncode != 0, proc.stdout[-1000:]
    assert "Traceback" not in err, err[-3000:]
    assert err.startswith("error: ") and len(err.splitlines()) == 1, err[-3000:]
    for word in must:
        assert word in err, err


LOCK = ".nemotron-data-prep.lock"  # the one file every run opens (flock), even one refused at once


def tree(out: Path) -> dict[str, bytes]:
    return {p.relative_to(out).as_posix(): p.read_bytes() for p in sorted(out.rglob("*"))
            if p.is_file() and p.name != LOCK}


# ── deletes only what it wrote ──────────────────────────────────────────────

USER_FILES = {  # shapes of our names in our dirs, all written by a user
    "pretrain": ["train/shard_notes.txt", "train/shard_00000.bin.notes", "valid/shard_old.idx",
                 ".done/shard_notes.json", "notes.md"],
    "sft": ["train/shard_notes.txt", "train/shard_00001.parquet.bak", "packed/notes.npy",
            ".done/shard_notes.json", "notes.md"],
    "rl": ["shards/shard_notes.jsonl", "shards/shard_00000.jsonl.orig", "train.jsonl.bak",
           ".done/shard_notes.json", "notes.md"],
}


@pytest.mark.parametrize("kind", KINDS)
def test_keeps_files_it_did_not_write_and_removes_its_own_leftovers(kind, tmp_path, tok_dir):
    src = write_records(tmp_path / "in.jsonl", kind, 80)
    out = tmp_path / "out"
    RUN[kind](cfg_for(kind, src, out, tok_dir, num_shards=3))
    for rel in USER_FILES[kind]:
        (out / rel).parent.mkdir(parents=True, exist_ok=True)
        (out / rel).write_text(f"mine: {rel}")
    RUN[kind](cfg_for(kind, src, out, tok_dir, num_shards=2))  # shard 2 of the first run is now stale
    for rel in USER_FILES[kind]:
        assert (out / rel).read_text() == f"mine: {rel}", rel
    assert not list(out.rglob("shard_00002.*")), "the data prep's own stale shard is removed"
    manifest = json.loads((out / ".nemotron-data-prep.json").read_text())
    assert not any("shard_00002" in f for f in manifest["files"])
    assert set(manifest["files"]) <= set(tree(out))


IN_THE_WAY = {
    "pretrain": ["train/shard_00000.bin", "blend.json", "metadata.json", ".done/shard_00001.json"],
    "sft": ["valid/shard_00001.parquet", "packed/train.npy", "report.json"],
    "rl": ["shards/shard_00000.jsonl", "validation.jsonl", "train.jsonl"],
}


@pytest.mark.parametrize("kind,rel", [(k, r) for k in KINDS for r in IN_THE_WAY[k]])
def test_a_file_in_the_way_is_an_error_before_any_work(kind, rel, tmp_path, tok_dir):
    src = write_records(tmp_path / "in.jsonl", kind, 40)
    out = tmp_path / "out"
    (out / rel).parent.mkdir(parents=True, exist_ok=True)
    (out / rel).write_bytes(b"a user's file")
    before = tree(out)
    with pytest.raises(ConfigError, match="in the way") as err:
        RUN[kind](cfg_for(kind, src, out, tok_dir))
    assert err.value.path == str(out / rel)
    assert tree(out) == before  # nothing written, nothing deleted
    proc = cli(kind, cfg_for(kind, src, out, tok_dir), tmp_path)
    assert_one_line_error(proc, str(out / rel), "in the way")


# ── one writer ──────────────────────────────────────────────────────────────

HOLDER = """
import sys, time, json
from nemotron.data_prep.{kind} import run_{kind}
cfg = json.loads(open(sys.argv[1]).read())
def stall(shard, result):
    print("SHARD DONE", flush=True)
    time.sleep(600)   # a real data prep, stuck half-way (killed by the test)
run_{kind}(cfg, on_shard_done=stall)
"""


def start_holder(kind: str, cfg: dict, tmp_path: Path) -> subprocess.Popen:
    path = tmp_path / "holder.json"
    path.write_text(json.dumps(cfg))
    proc = subprocess.Popen([sys.executable, "-c", HOLDER.format(kind=kind), str(path)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    for line in proc.stdout:
        if "SHARD DONE" in line:
            return proc
    raise AssertionError(proc.stderr.read())


def check_pretrain_consistent(out: Path) -> None:
    """Every blend.json weight is the token count of its shard's .idx, which matches the .bin size."""
    blend = json.loads((out / "blend.json").read_text())
    dtype_size = {"uint16": 2, "int32": 4}[json.loads((out / "metadata.json").read_text())["dtype"]]
    for entries in blend.values():
        for weight, prefix in zip((entries or [])[::2], (entries or [])[1::2], strict=True):
            idx = Path(prefix + ".idx").read_bytes()
            (n,) = struct.unpack("<Q", idx[18:26])
            lengths = struct.unpack(f"<{n}i", idx[34:34 + 4 * n])
            assert int(weight) == sum(lengths)
            assert Path(prefix + ".bin").stat().st_size == sum(lengths) * dtype_size


@pytest.mark.parametrize("kind", KINDS)
def test_second_writer_is_refused_and_a_sigkilled_holder_is_repaired(kind, tmp_path, tok_dir):
    src = write_records(tmp_path / "in.jsonl", kind, 300)
    out = tmp_path / "out"
    cfg = cfg_for(kind, src, out, tok_dir, num_shards=4)
    holder = start_holder(kind, cfg, tmp_path)
    try:
        # a leftover temp file of the holder, as a kill mid-write leaves one
        leftover = out / ".done" / f".shard_00003.json.{holder.pid}-0123abcd.tmp"
        leftover.write_text("half")
        proc = cli(kind, cfg, tmp_path)
        assert_one_line_error(proc, "another data prep is writing", f"pid {holder.pid}", str(out))
        assert proc.returncode == 1
        with pytest.raises(ExecutionError, match=f"pid {holder.pid}"):
            RUN[kind](cfg)
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait(timeout=30)
    proc = cli(kind, cfg, tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "was killed" in proc.stdout and f"pid {holder.pid}" in proc.stdout
    assert "resuming: 1 of 4" in proc.stdout
    assert not leftover.exists()
    assert not [p for p in out.rglob("*") if p.name.endswith(".tmp")]
    if kind == "pretrain":
        check_pretrain_consistent(out)
    # the repaired dir equals a clean run's
    clean = tmp_path / "clean"
    RUN[kind]({**cfg, "output_dir": str(clean)})
    ours, theirs = tree(out), tree(clean)
    skip = ("blend.json", "metadata.json", "report.json", ".nemotron-data-prep.json", ".nemotron-data-prep.lock")
    assert {k for k in ours if not k.startswith(".done/")} == {k for k in theirs if not k.startswith(".done/")}
    assert {k: v for k, v in ours.items() if k not in skip and not k.startswith(".done/")} == \
        {k: v for k, v in theirs.items() if k not in skip and not k.startswith(".done/")}


def test_two_writers_of_one_shard_never_share_a_temporary_file(tmp_path, tok_dir):
    """Without the lock (two nodes, a bug): each writer has its own temp names, so the
    shard that ends up in place is one writer's whole output, never a mix."""
    from nemotron.data_prep.report import tmp_path_for

    dest = tmp_path / "x" / "shard_00000.bin"
    names = {tmp_path_for(dest) for _ in range(1000)}
    assert len(names) == 1000 and all(n.parent == dest.parent and n.name.endswith(".tmp") for n in names)
    code = """
import sys
from pathlib import Path
from nemotron.data_prep.indexed_dataset import IndexedDatasetWriter
w = IndexedDatasetWriter(Path(sys.argv[1]), "uint16")
for i in range(20000):
    w.add_document([int(sys.argv[2])] * 50)
w.finalize()
"""
    out = tmp_path / "x"
    out.mkdir()
    procs = [subprocess.Popen([sys.executable, "-c", code, str(out / "shard_00000"), str(v)]) for v in (1, 2)]
    assert [p.wait(timeout=120) for p in procs] == [0, 0]
    data = (out / "shard_00000.bin").read_bytes()
    assert len(data) == 20000 * 50 * 2
    assert set(data[::2]) in ({1}, {2})  # one writer's tokens, not a mix
    assert sorted(p.name for p in out.iterdir()) == ["shard_00000.bin", "shard_00000.idx"]


# ── empty results ───────────────────────────────────────────────────────────

EMPTY_INPUTS = {
    "empty file": lambda kind: "",
    "blank lines only": lambda kind: "\n\n  \n",
    "all bad records": lambda kind: "garbage\n{\"nope\": 1}\n[1, 2]\n",
}


@pytest.mark.parametrize("variant", sorted(EMPTY_INPUTS))
@pytest.mark.parametrize("kind", KINDS)
def test_an_empty_result_fails_and_never_moves_latest(kind, variant, tmp_path, tok_dir):
    good = write_records(tmp_path / "good.jsonl", kind, 60)
    RUN[kind](cfg_for(kind, good, None, tok_dir, publish={"name": NAME}))
    latest = get_registry().resolve(f"{NAME}:latest")
    bad = tmp_path / "bad.jsonl"
    bad.write_text(EMPTY_INPUTS[variant](kind))
    proc = cli(kind, cfg_for(kind, bad, None, tok_dir, publish={"name": NAME}), tmp_path)
    assert_one_line_error(proc, "allow_empty")
    set_registry(None)
    assert get_registry().resolve(f"{NAME}:latest").version == latest.version
    assert [a.version for a in get_registry().versions(NAME)] == [latest.version]
    # allowed on purpose: published
    proc = cli(kind, cfg_for(kind, bad, None, tok_dir, allow_empty=True, publish={"name": NAME}), tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    set_registry(None)
    assert get_registry().resolve(f"{NAME}:latest").version == latest.version + 1


@pytest.mark.parametrize("kind", KINDS)
def test_a_near_empty_result_fails(kind, tmp_path, tok_dir):
    src = write_records(tmp_path / "in.jsonl", kind, 5)
    with pytest.raises(ExecutionError, match="min_records"):
        RUN[kind](cfg_for(kind, src, tmp_path / "a", tok_dir, min_records=50, publish={"name": NAME}))
    with pytest.raises(ExecutionError, match="train split is empty"):  # everything went to the other splits
        RUN[kind](cfg_for(kind, src, tmp_path / "b", tok_dir, split="0,1", min_records=1, publish={"name": NAME}))
    assert get_registry().list() == []
    RUN[kind](cfg_for(kind, src, tmp_path / "c", tok_dir, split="0,1", allow_empty=True, publish={"name": NAME}))
    assert get_registry().resolve(f"{NAME}:latest").version == 1


@pytest.mark.parametrize("kind", KINDS)
def test_the_default_calls_fewer_than_10_records_near_empty(kind, tmp_path, tok_dir):
    """docs/data-prep.md "Empty results": without min_records, 9 records are an error
    (nothing published), 10 are a dataset."""
    train_only = "1,0" if kind == "rl" else "1,0,0"
    nine = write_records(tmp_path / "nine.jsonl", kind, 9)
    with pytest.raises(ExecutionError, match=r"only 9 records .*\(min_records 10\)"):
        RUN[kind](cfg_for(kind, nine, tmp_path / "a", tok_dir, split=train_only, publish={"name": NAME}))
    assert get_registry().list() == []
    ten = write_records(tmp_path / "ten.jsonl", kind, 10)
    RUN[kind](cfg_for(kind, ten, tmp_path / "b", tok_dir, split=train_only, publish={"name": NAME}))
    assert get_registry().resolve(f"{NAME}:latest").version == 1


# ── faults are one line ─────────────────────────────────────────────────────


@pytest.mark.parametrize("kind", KINDS)
def test_a_fifo_input_is_an_error_not_a_hang(kind, tmp_path, tok_dir):
    fifo = tmp_path / "in.jsonl"
    os.mkfifo(fifo)
    proc = cli(kind, cfg_for(kind, fifo, tmp_path / "out", tok_dir), tmp_path, timeout=60)
    assert_one_line_error(proc, str(fifo), "FIFO")


@pytest.mark.parametrize("kind", KINDS)
def test_an_unreadable_input_is_an_error_naming_it(kind, tmp_path, tok_dir):
    """A read that fails: /proc/self/mem (EIO at offset 0, also for root); as a normal user also a
    file without read permission (root reads those)."""
    cfg = cfg_for(kind, Path("/proc/self/mem"), tmp_path / "out", tok_dir, input={"paths": ["/proc/self/mem"],
                                                                                  "format": "jsonl"})
    assert_one_line_error(cli(kind, cfg, tmp_path), "/proc/self/mem: cannot read input")
    if os.geteuid() != 0:
        src = write_records(tmp_path / "in.jsonl", kind, 20)
        src.chmod(0)
        assert_one_line_error(cli(kind, cfg_for(kind, src, tmp_path / "out", tok_dir), tmp_path),
                              f"{src}: cannot read input")


@pytest.fixture
def full_disk(tmp_path):
    """A real, tiny filesystem (tmpfs) that fills up."""
    mnt = tmp_path / "full"
    mnt.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=48k", "tmpfs", str(mnt)],
                      capture_output=True).returncode != 0:
        pytest.skip("cannot mount a tmpfs (needs root)")
    yield mnt
    subprocess.run(["umount", "-l", str(mnt)], check=True)


@pytest.mark.allowed_skip("mounting a tmpfs needs root; CI runs as root")
@pytest.mark.parametrize("kind", KINDS)
def test_a_full_disk_is_one_line_naming_the_file_and_leaves_no_temp_files(kind, tmp_path, tok_dir, full_disk):
    src = write_records(tmp_path / "in.jsonl", kind, 3000)
    out = full_disk / "out"
    proc = cli(kind, cfg_for(kind, src, out, tok_dir), tmp_path)
    assert_one_line_error(proc, "No space left on device", str(out) + "/")
    assert "cannot write data-prep output" in proc.stderr
    assert not [p for p in out.rglob("*") if p.name.endswith(".tmp")]


@pytest.mark.parametrize("kind", KINDS)
def test_path_and_file_faults_are_one_line(kind, tmp_path, tok_dir):
    src = write_records(tmp_path / "in.jsonl", kind, 20)
    afile = tmp_path / "afile"
    afile.write_text("x")
    assert_one_line_error(cli(kind, cfg_for(kind, src, afile, tok_dir), tmp_path), str(afile))
    assert_one_line_error(cli(kind, cfg_for(kind, src, afile / "sub", tok_dir), tmp_path), str(afile))
    # a corrupt manifest names itself
    out = tmp_path / "out"
    RUN[kind](cfg_for(kind, src, out, tok_dir))
    (out / ".nemotron-data-prep.json").write_text("{not json")
    assert_one_line_error(cli(kind, cfg_for(kind, src, out, tok_dir), tmp_path),
                          str(out / ".nemotron-data-prep.json"), "corrupt")
    # a corrupt registry file names itself; nothing is published
    cfg = cfg_for(kind, src, tmp_path / "pub", tok_dir, publish={"name": NAME})
    assert cli(kind, cfg, tmp_path).returncode == 0
    aliases = tmp_path / "registry" / NAME / "aliases.json"
    aliases.write_text('{"broken')
    assert_one_line_error(cli(kind, {**cfg, "output_dir": str(tmp_path / "pub2"), "seed": 9}, tmp_path),
                          str(aliases))
    # a wrong-typed override, a corrupt parquet input, a name that is a path
    assert_one_line_error(cli(kind, cfg, tmp_path, "max_record_bytes=big"), "max_record_bytes")
    assert_one_line_error(cli(kind, cfg, tmp_path, "name=../../x"), "name")
    bad_parquet = tmp_path / "in.parquet"
    bad_parquet.write_bytes(b"PAR1 not really")
    assert_one_line_error(cli(kind, cfg_for(kind, bad_parquet, tmp_path / "o3", tok_dir), tmp_path),
                          str(bad_parquet))


# ── memory per record ───────────────────────────────────────────────────────

RSS = """
import json, resource, sys
from nemotron.data_prep.{kind} import run_{kind}
s = run_{kind}(json.loads(open(sys.argv[1]).read()))
print(json.dumps({{"rss_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}}))
"""


def peak_rss_kb(kind: str, cfg: dict, tmp_path: Path) -> int:
    path = tmp_path / f"rss-{time.monotonic_ns()}.json"
    path.write_text(json.dumps(cfg))
    proc = subprocess.run([sys.executable, "-c", RSS.format(kind=kind), str(path)], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])["rss_kb"]


@pytest.mark.parametrize("kind", KINDS)
def test_an_oversized_record_is_bad_and_never_loaded(kind, tmp_path, tok_dir):
    small = write_records(tmp_path / "small.jsonl", kind, 200)
    huge = tmp_path / "huge.jsonl"
    with open(huge, "w") as f:
        f.write(small.read_text())
        key = {"pretrain": "text", "sft": "messages", "rl": "prompt"}[kind]
        f.write(f'{{"{key}": "' + "word " * (16 * 1024 * 1024) + '"}\n')  # one 80 MB line
        f.write(json.dumps(record(kind, 999, random.Random(3))) + "\n")
    limit = 1 << 20
    base = peak_rss_kb(kind, cfg_for(kind, small, tmp_path / "o1", tok_dir, max_record_bytes=limit), tmp_path)
    cfg = cfg_for(kind, huge, tmp_path / "o2", tok_dir, max_record_bytes=limit)
    peak = peak_rss_kb(kind, cfg, tmp_path)
    assert peak - base < 40 * 1024, f"{(peak - base) / 1024:.0f} MB more for one 80 MB line"
    report = json.loads((tmp_path / "o2" / "report.json").read_text())
    assert report["bad"]["by_reason"] == {"too_large": 1}
    assert report["records"] == 202
    assert report["bad"]["examples"][0]["line"] == 201


def test_record_size_bound_is_exact_and_applies_to_parquet(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    from nemotron.data_prep.sharding import plan_shards
    from nemotron.data_prep.sources import Bad, iter_segment, scan_input

    lines = [b'{"t": "' + b"x" * n + b'"}' for n in (0, 3, 4, 5, 100)]  # 9, 12, 13, 14, 109 bytes
    p = tmp_path / "a.jsonl"
    p.write_bytes(b"\n".join(lines))  # no newline at the end
    for limit in (12, 13, 14, 200):
        shards = plan_shards([scan_input(str(p))], 2)
        got = [r for s in shards for seg in s.segments for _, r in iter_segment(seg, limit)]
        assert [isinstance(r, Bad) for r in got] == [len(x) > limit for x in lines]
    pq.write_table(pa.table({"t": ["a", "b" * 5000, "c"]}), tmp_path / "a.parquet")
    (shard,) = plan_shards([scan_input(str(tmp_path / "a.parquet"))], 1)
    got = [r for seg in shard.segments for _, r in iter_segment(seg, 1000)]
    assert [isinstance(r, Bad) for r in got] == [False, True, False]


# ── content key and published versions ──────────────────────────────────────


def test_content_key_covers_every_byte(tmp_path, tok_dir):
    """Change one byte anywhere in a > 1 MiB input (head, middle, the very end): another dir."""
    from nemotron.data_prep.common import make_plan

    src = write_records(tmp_path / "in.jsonl", "pretrain", 20000)
    data = src.read_bytes()
    assert len(data) > 1 << 20
    cfg = cfg_for("pretrain", src, None, tok_dir, name="ds")
    with make_plan(cfg, "pretrain", "x") as plan:
        first = plan.out_dir
    seen = {first}
    last = data.rfind(b"alpha")
    assert last > len(data) - 4000  # near the end, well past the first MiB
    for i in (data.find(b"alpha"), data.find(b"alpha", len(data) // 2), last):
        src.write_bytes(data[:i] + b"omega" + data[i + 5:])  # one word, same size, same records
        with make_plan(cfg, "pretrain", "x") as plan:
            assert plan.out_dir not in seen
            seen.add(plan.out_dir)
    src.write_bytes(data)
    os.utime(src, (1, 1))  # same bytes, another mtime: the same key
    with make_plan(cfg, "pretrain", "x") as plan:
        assert plan.out_dir == first


@pytest.mark.parametrize("kind", KINDS)
def test_a_published_dir_is_never_written_again(kind, tmp_path, tok_dir):
    src = write_records(tmp_path / "in.jsonl", kind, 4000)
    out = tmp_path / "out"
    cfg = cfg_for(kind, src, out, tok_dir, publish={"name": NAME})
    RUN[kind](cfg)
    v1 = get_registry().resolve(f"{NAME}:latest")
    assert Path(v1.path) == out
    stat = {p: (p.stat().st_mtime_ns, p.stat().st_ino) for p in out.rglob("*") if p.is_file() and p.name != LOCK}
    before = tree(out)
    # same config, same inputs: nothing written, published again
    RUN[kind](cfg)
    assert {p: (p.stat().st_mtime_ns, p.stat().st_ino) for p in out.rglob("*")
            if p.is_file() and p.name != LOCK} == stat
    assert get_registry().resolve(f"{NAME}:latest").version == v1.version + 1
    # one word changed near the end of the input, or another setting: refused, untouched
    text = src.read_text()
    cut = text.rindex("alpha") if "alpha" in text[-2000:] else len(text) - 200
    src.write_text(text[:cut] + "omega" + text[cut + 5:])
    for changed in (cfg, {**cfg, "seed": 99}):
        with pytest.raises(ConfigError, match="published"):
            RUN[kind](changed)
    assert tree(out) == before
    # the default, keyed dir: the changed input gets a new dir; v1's files stay as they were
    keyed = {**cfg}
    del keyed["output_dir"]
    RUN[kind]({**keyed, "name": "k"})
    src.write_text(text)
    RUN[kind]({**keyed, "name": "k"})
    dirs = {Path(a.path) for a in get_registry().versions(NAME)}
    assert len([d for d in dirs if d.parent.name == "k"]) == 2
    assert tree(out) == before


FORKED_HOLDER = """
import os, sys, time
from pathlib import Path
from nemotron.data_prep.output import OutputLock
lock = OutputLock(Path(sys.argv[1]))
lock.acquire()
child = os.fork()  # a worker forked while the lock is held, as the data prep's pool does
if child == 0:
    time.sleep(600)
print(child, flush=True)
time.sleep(600)
"""


def test_a_killed_holder_whose_forked_worker_lives_on_is_taken_over(tmp_path, tok_dir):
    """SIGKILL of the data prep while a worker it forked still runs: the directory's lock
    must not stay "held by pid N" with N dead (a kernel flock would, through the worker)."""
    kind = "pretrain"
    src = write_records(tmp_path / "in.jsonl", kind, 60)
    out = tmp_path / "out"
    out.mkdir()
    holder = subprocess.Popen([sys.executable, "-c", FORKED_HOLDER, str(out)], stdout=subprocess.PIPE, text=True)
    worker = int(holder.stdout.readline())
    try:
        holder.send_signal(signal.SIGKILL)
        holder.wait(timeout=30)
        proc = cli(kind, cfg_for(kind, src, out, tok_dir), tmp_path)
        assert proc.returncode == 0, proc.stderr[-2000:]
        assert f"took over the lock of the previous data prep into {out} (pid {holder.pid} on " in proc.stdout
        assert "was killed" in proc.stdout
    finally:
        os.kill(worker, signal.SIGKILL)


def test_a_lock_held_from_another_host_names_the_host_and_how_to_clear_it(tmp_path, tok_dir):
    kind = "rl"
    src = write_records(tmp_path / "in.jsonl", kind, 40)
    out = tmp_path / "out"
    out.mkdir()
    (out / LOCK).write_text(json.dumps({"pid": 4242, "host": "node-17.other", "start": 1,
                                        "since": "2025-01-01T10:00:00"}))
    proc = cli(kind, cfg_for(kind, src, out, tok_dir), tmp_path)
    assert_one_line_error(proc, "another data prep is writing this directory: pid 4242 on node-17.other",
                          "which this machine cannot check", f"delete {out / LOCK}")
    assert (out / LOCK).exists()
