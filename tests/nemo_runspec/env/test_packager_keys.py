"""Which profile keys each packager reads (env/packager_keys.py): a set key the chosen packager
does not read is named, with the packagers that do read it."""

from __future__ import annotations

from nemo_runspec.env.packager_keys import unused_keys, unused_message


def test_keys_the_packager_does_not_read_in_table_order():
    keys = {"workdir": "/w", "packager_subpath": "src", "check_uncommitted": True, "nodes": 2}
    assert unused_keys("git", keys) == ["workdir"]
    assert unused_keys("none", keys) == ["packager_subpath", "check_uncommitted"]
    assert unused_keys("hybrid", {"packager_subpath": None, "packagers": {}}) == []  # None is unset
    assert unused_keys("pattern", {"subpath", "relative_path"}, sub=True) == ["subpath"]


def test_the_message_starts_with_the_key_and_names_its_readers():
    assert unused_message("packager_subpath", "src", "pattern") == (
        "packager_subpath = 'src' is not used by packager = \"pattern\" "
        "(read only by packager = 'git' or 'code'; remove it or change packager)")
    assert unused_message("check_uncommitted", False, "code").startswith("check_uncommitted = false ")
    assert unused_message("packagers", {"a": 1}, "git").startswith("packagers = {...} ")
    assert unused_message("include_pattern", ["a"], "code", sub=True).startswith("include_pattern = [...] ")


def test_a_default_packager_says_why_it_was_chosen():
    msg = unused_message("workdir", "/w", "git", default_reason="the recipe is in a git repo")
    assert "the default for this recipe since the profile names no packager (the recipe is in a git repo)" in msg
    assert msg.endswith("set packager = 'none' in the profile or remove the key")
