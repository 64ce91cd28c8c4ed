"""What a published version held and whether it still holds it (artifacts/contents.py),
on real files."""

from __future__ import annotations

from types import SimpleNamespace

from nemo_runspec.artifacts import contents
from nemo_runspec.artifacts.contents import describe_missing, gone_reason, missing, summarize


def _tree(root):
    (root / "shards").mkdir(parents=True)
    (root / "model.pt").write_bytes(b"x" * 10)
    (root / "shards" / "a.bin").write_bytes(b"y" * 3)
    (root / "write.lock").write_text("held")  # transient: not recorded
    return root


def test_summarize_lists_each_file_with_its_size(tmp_path):
    root = _tree(tmp_path / "out")
    assert summarize(str(root)) == {"files": 2, "bytes": 13, "listing": {"model.pt": 10, "shards/a.bin": 3}}
    assert summarize(str(root / "model.pt")) == {"files": 1, "bytes": 10, "listing": {"": 10}}
    assert summarize(str(tmp_path / "nowhere")) is None
    assert summarize("s3://bucket/x") is None


def test_big_trees_keep_counts_only_and_huge_ones_only_that_they_were_big(tmp_path, monkeypatch):
    root = _tree(tmp_path / "out")
    monkeypatch.setattr(contents, "LISTED", 1)
    assert summarize(str(root)) == {"files": 2, "bytes": 13}
    monkeypatch.setattr(contents, "COUNTED", 1)
    assert summarize(str(root)) == {"files": None, "bytes": None}


def test_missing_names_what_is_gone_or_resized(tmp_path):
    root = _tree(tmp_path / "out")
    record = summarize(str(root))
    assert missing(str(root), record) == []
    (root / "model.pt").write_bytes(b"x")
    (root / "shards" / "a.bin").unlink()
    assert missing(str(root), record) == ["model.pt (size changed)", "shards/a.bin"]
    assert missing(str(tmp_path / "gone"), record) == [str(tmp_path / "gone")]
    assert missing(str(root), None) == [] and missing("s3://b/x", record) == []


def test_without_a_listing_fewer_files_are_counted(tmp_path):
    root = _tree(tmp_path / "out")
    (root / "shards" / "a.bin").unlink()
    assert missing(str(root), {"files": 2, "bytes": 13}) == ["1 of its 2 files"]
    assert missing(str(root), {"files": 1, "bytes": 10}) == []


def test_the_reason_a_version_cannot_be_reused(tmp_path):
    root = _tree(tmp_path / "out")
    art = SimpleNamespace(ref="ckpt:v3", path=str(root), metadata={"contents": summarize(str(root))})
    assert gone_reason(art) == ""
    (root / "model.pt").unlink()
    (root / "shards" / "a.bin").unlink()
    assert gone_reason(art) == (f"ckpt:v3 was made from the same config and inputs, but its files are gone from "
                                f"{root}: model.pt and 1 more")
    assert describe_missing([]) == "" and describe_missing(["a"]) == "a"
