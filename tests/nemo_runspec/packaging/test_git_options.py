"""The git packager's profile options at the top level (packager_include_pattern,
include_submodules), recorded in packaging.json, and packager keys the chosen
packager does not read refused in one line. Real git repositories in tmp dirs."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from nemo_runspec import parse
from nemo_runspec.env import load_env_profile
from nemo_runspec.errors import EnvFileError, PackagingError
from nemo_runspec.packaging.select import build_packager
from tests.nemo_runspec.packaging.git_repos import git, make_repo, tar_contents
from tests.nemo_runspec.packaging.test_select import write_script


@pytest.fixture(autouse=True)
def _home(tmp_path, monkeypatch):
    monkeypatch.setenv("NEMOTRON_HOME", str(tmp_path / "home"))


@pytest.fixture
def repo(tmp_path):
    r = make_repo(tmp_path / "r")
    write_script(r / "src/proj/recipes/train.py", "import proj.util\n")
    git(r, "add", "-A")
    git(r, "commit", "-qm", "script")
    return r


def _package(profile, repo, tmp_path, name="t"):
    spec = parse(repo / "src/proj/recipes/train.py")
    packager, plan = build_packager(profile, runspec=spec, script_path=spec.script_path, use_cache=False)
    job = tmp_path / f"job-{name}"
    job.mkdir()
    out = packager.package(Path("/"), str(job), name)
    return tar_contents(out), plan, json.loads((job / f"{name}.packaging.json").read_text())


def test_include_pattern_ships_matching_uncommitted_files_and_records_them(repo, tmp_path):
    (repo / "build").mkdir()  # ignored by .gitignore: generated files
    (repo / "build/vocab.json").write_text('{"a": 1}\n')
    (repo / "notes.txt").write_text("untracked, not matched\n")
    files, plan, saved = _package({"packager": "git", "packager_include_pattern": ["build/*.json", "*.md"]},
                                  repo, tmp_path)
    assert files["build/vocab.json"] == b'{"a": 1}\n'
    assert "notes.txt" not in files  # only what the pattern matches
    assert files["src/proj/util.py"] == b"def f():\n    return 2\n"  # the commit, as always
    # README.md matches *.md but is committed unchanged: in the archive, not an extra file
    assert files["README.md"] == b"readme\n"
    assert [e["path"] for e in saved["extra_files"]] == ["build/vocab.json"]
    assert saved["extra_files"][0]["source"] == str(repo / "build/vocab.json")
    assert saved["extra_files"] == plan.extra_files and len(saved["extra_files"][0]["sha256"]) == 64
    assert "notes.txt" in saved["untracked"] and "build/vocab.json" not in saved["untracked"]


def test_include_pattern_ships_edited_tracked_file_instead_of_refusing(repo, tmp_path):
    (repo / "README.md").write_text("edited\n")
    spec = parse(repo / "src/proj/recipes/train.py")
    with pytest.raises(PackagingError, match="uncommitted changes to 1 packaged file"):
        packager, _ = build_packager({"packager": "git"}, runspec=spec, script_path=spec.script_path,
                                     use_cache=False)
        job = tmp_path / "j0"
        job.mkdir()
        packager.package(Path("/"), str(job), "t")
    files, _, saved = _package({"packager": "git", "packager_include_pattern": "README.md"}, repo, tmp_path)
    assert files["README.md"] == b"edited\n"
    assert [e["path"] for e in saved["extra_files"]] == ["README.md"]
    assert saved["dirty"] is False  # nothing uncommitted left out


def test_include_pattern_is_relative_to_subpath_and_changes_the_cache_key(repo, tmp_path):
    (repo / "src/gen.txt").write_text("one\n")
    spec = parse(repo / "src/proj/recipes/train.py")
    prof = {"packager": "git", "packager_subpath": "src", "packager_include_pattern": "gen.txt"}
    outs = []
    for i, text in enumerate(("one\n", "two\n")):
        (repo / "src/gen.txt").write_text(text)
        packager, _ = build_packager(prof, runspec=spec, script_path=spec.script_path)  # cache on
        job = tmp_path / f"c{i}"
        job.mkdir()
        outs.append(tar_contents(packager.package(Path("/"), str(job), "t")))
    assert outs[0]["gen.txt"] == b"one\n" and outs[1]["gen.txt"] == b"two\n"  # not a stale cache hit
    assert "proj/util.py" in outs[0]


def test_include_pattern_matching_nothing_fails_before_packaging(repo):
    spec = parse(repo / "src/proj/recipes/train.py")
    with pytest.raises(PackagingError, match="matches no file") as ei:
        build_packager({"packager": "git", "packager_include_pattern": "nope/*.bin"},
                       runspec=spec, script_path=spec.script_path)
    assert ei.value.key == "packager_include_pattern"


def _with_submodule(tmp_path):
    lib = make_repo(tmp_path / "lib", {"lib.py": "LIB = 1\n"})
    r = make_repo(tmp_path / "r")
    write_script(r / "src/proj/recipes/train.py", "import proj.util\n")
    git(r, "submodule", "add", "-q", str(lib), "third_party/lib")
    git(r, "add", "-A")
    git(r, "commit", "-qm", "add submodule")
    return r


def test_include_submodules_at_the_top_level_default_true(tmp_path):
    repo = _with_submodule(tmp_path)
    files, _, _ = _package({"packager": "git"}, repo, tmp_path, "a")
    assert files["third_party/lib/lib.py"] == b"LIB = 1\n"
    files, _, _ = _package({"packager": "git", "include_submodules": False}, repo, tmp_path, "b")
    assert "third_party/lib/lib.py" not in files and "src/proj/util.py" in files


def test_hybrid_git_part_honours_include_submodules_profile_default(tmp_path):
    repo = _with_submodule(tmp_path)
    prof = {"packager": "hybrid", "include_submodules": False,
            "packagers": {"code": {"packager": "git"}, "lib": {"packager": "git", "include_submodules": True}}}
    files, _, _ = _package(prof, repo, tmp_path)
    assert "code/third_party/lib/lib.py" not in files  # the profile's value is the parts' default
    assert files["lib/third_party/lib/lib.py"] == b"LIB = 1\n"


@pytest.mark.parametrize(("profile", "key", "kind"), [
    ({"packager": "git", "packager_relative_path": "."}, "packager_relative_path", "git"),
    ({"packager": "code", "include_submodules": False}, "include_submodules", "code"),
    ({"packager": "code", "packager_include_pattern": "x"}, "packager_include_pattern", "code"),
    ({"packager": "pattern", "packager_include_pattern": "*.md", "check_uncommitted": False},
     "check_uncommitted", "pattern"),
    ({"packager": "self_contained", "packager_subpath": "src"}, "packager_subpath", "self_contained"),
    ({"packager": "git", "workdir": "/opt/x"}, "workdir", "git"),
])
def test_build_packager_refuses_keys_the_packager_does_not_read(repo, profile, key, kind):
    spec = parse(repo / "src/proj/recipes/train.py")
    with pytest.raises(PackagingError) as ei:
        build_packager(profile, runspec=spec, script_path=spec.script_path)
    msg = str(ei.value)
    assert msg.startswith(f"{key} = ") and f'is not used by packager = "{kind}"' in msg and "\n" not in msg
    assert ei.value.key == key


@pytest.mark.parametrize(("profile", "key"), [({"include_submodules": False}, "include_submodules"),
                                            ({"packager_relative_path": "."}, "packager_relative_path"),
                                            ({"workdir": "/opt/x"}, "workdir")])
def test_without_packager_keys_the_recipe_default_does_not_read_are_refused(repo, profile, key):
    """No ``packager`` in the profile: the recipe's default (here ``code``: the script imports
    project code) is checked like a named one, and the line says it is the default and why."""
    spec = parse(repo / "src/proj/recipes/train.py")
    with pytest.raises(PackagingError) as ei:
        build_packager(profile, runspec=spec, script_path=spec.script_path)
    msg = str(ei.value)
    assert msg.startswith(f'{key} = ') and "\n" not in msg and ei.value.key == key
    assert ('is not used by packager = "code", the default for this recipe since the profile names no packager '
            "(default: the script imports project code (proj.util, line ") in msg
    assert "set packager = " in msg


def test_without_packager_keys_the_recipe_default_reads_are_accepted(repo, tmp_path):
    spec = parse(repo / "src/proj/recipes/train.py")
    _, plan = build_packager({"packager_subpath": "src"}, runspec=spec, script_path=spec.script_path)
    assert plan.kind == "code"


def test_hybrid_part_with_a_key_its_packager_does_not_read(repo):
    spec = parse(repo / "src/proj/recipes/train.py")
    with pytest.raises(PackagingError, match=r'packagers\.c: subpath = .src. is not used by packager = "pattern"'):
        build_packager({"packager": "hybrid", "packagers": {"c": {"packager": "pattern", "include_pattern": "*.md",
                                                                  "subpath": "src"}}},
                       runspec=spec, script_path=spec.script_path)


def _env(tmp_path, body):
    path = tmp_path / "env.toml"
    path.write_text(textwrap.dedent(body).lstrip())
    return path


def test_env_toml_unused_packager_key_is_one_line_at_its_line(tmp_path):
    path = _env(tmp_path, """
        [base]
        packager_relative_path = "."

        [c]
        extends = "base"
        packager = "git"
        include_submodules = false
    """)
    with pytest.raises(EnvFileError) as ei:
        load_env_profile("c", path)
    msg = str(ei.value)
    assert msg.startswith(f"{path}:2: [c]: packager_relative_path = '.' is not used by packager = \"git\"")
    assert "read only by packager = 'pattern'" in msg and "\n" not in msg


def test_env_toml_git_options_at_top_level_are_accepted(tmp_path):
    path = _env(tmp_path, """
        [c]
        packager = "git"
        include_submodules = false
        check_uncommitted = true
        packager_include_pattern = ["build/*.json"]
        packager_subpath = "src"
    """)
    prof = load_env_profile("c", path)
    assert prof.values["include_submodules"] is False
    assert prof.get("include_submodules") is False
    assert load_env_profile("c", _env(tmp_path, '[c]\npackager = "git"\n')).get("include_submodules") is True


def test_env_toml_sub_packager_key_it_does_not_read(tmp_path):
    path = _env(tmp_path, """
        [h]
        packager = "hybrid"
        [h.packagers.tree]
        packager = "code"
        include_submodules = false
    """)
    with pytest.raises(EnvFileError, match='include_submodules = false is not used by packager = "code"'):
        load_env_profile("h", path)


def test_without_packager_the_keys_are_left_to_the_recipe_default(tmp_path):
    # the default depends on the recipe (code, self_contained, ...): not an error here
    path = _env(tmp_path, '[c]\ninclude_submodules = false\npackager_subpath = "src"\n')
    assert load_env_profile("c", path).values["packager_subpath"] == "src"
