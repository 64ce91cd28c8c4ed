"""env.toml reading and `extends` (docs/env-toml.md): the rules mutation testing found
unstated (docs/dev/mutation.md)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from nemo_runspec import env as envmod
from nemo_runspec.env.discovery import CREATE_HINT
from nemo_runspec.env.file import load_env_file
from nemo_runspec.env.profile import partition_for
from nemo_runspec.errors import EnvFileError

CHAIN = """\
[base]
executor = "slurm"
account = "a"
mounts = ["/a:/a", "/b:/b"]
env_vars = { A = "1", B = "2" }
packagers = { code = { packager = "git", subpath = "src" } }

[child]
extends = "base"
mounts = ["/c:/c"]
env_vars = { B = "3" }
packagers = { code = { packager = "git", include_submodules = true }, extra = { packager = "pattern", include_pattern = "x/*" } }

[grandchild]
extends = "child"
env_vars = { C = "4" }
nodes = 2
"""


@pytest.fixture
def chain(tmp_path: Path) -> Path:
    path = tmp_path / "env.toml"
    path.write_text(CHAIN)
    return path


def test_extends_merges_nested_tables_key_by_key_and_replaces_lists(chain: Path) -> None:
    prof = envmod.load_env_profile("grandchild", chain)
    assert prof.chain == ["grandchild", "child", "base"]
    assert prof.values["mounts"] == ["/c:/c"]
    assert prof.values["env_vars"] == {"A": "1", "B": "3", "C": "4"}
    assert prof.values["packagers"] == {
        "code": {"packager": "git", "subpath": "src", "include_submodules": True},
        "extra": {"packager": "pattern", "include_pattern": "x/*"},
    }
    assert prof.values["nodes"] == 2 and prof.values["account"] == "a"


def test_every_merged_value_knows_its_profile_and_line(chain: Path) -> None:
    src = {k: (s.profile, s.line) for k, s in envmod.load_env_profile("grandchild", chain).sources.items()}
    assert src["account"] == ("base", 3)
    assert src["env_vars.A"] == ("base", 5)
    assert src["env_vars.B"] == ("child", 11)
    assert src["env_vars.C"] == ("grandchild", 16)
    assert src["packagers.code.subpath"] == ("base", 6)
    assert src["packagers.code.include_submodules"] == ("child", 12)
    assert src["mounts"] == ("child", 10)
    assert src["nodes"] == ("grandchild", 17)
    assert str(envmod.load_env_profile("grandchild", chain).sources["nodes"]).endswith(":17 [grandchild]")


def test_a_parent_is_unchanged_by_its_children(chain: Path) -> None:
    ef = load_env_file(chain)
    envmod.load_env_profile("grandchild", ef)
    base = envmod.load_env_profile("base", ef)
    assert base.values["env_vars"] == {"A": "1", "B": "2"}
    assert base.values["packagers"] == {"code": {"packager": "git", "subpath": "src"}}


# ------------------------------------------------------------------ ${oc.env:...}


def test_oc_env_forms(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NEMO_T_ACCT", "acct1")
    monkeypatch.delenv("NEMO_T_MISSING", raising=False)
    path = tmp_path / "env.toml"
    path.write_text('[p]\nexecutor = "slurm"\naccount = "${oc.env:NEMO_T_ACCT}"\n'
                    'partition = "${oc.env:NEMO_T_MISSING,\'dflt\'}"\n'
                    'env_vars = { X = "a-${oc.env: NEMO_T_ACCT }", Y = "${oc.env:NEMO_T_MISSING,}" }\n'
                    'mounts = ["${oc.env:NEMO_T_ACCT}:/m"]\nstartup_commands = ["echo \\\\${oc.env:KEEP}"]\n')
    prof = envmod.load_env_profile("p", path)
    assert prof.values["account"] == "acct1"
    assert prof.values["partition"] == "dflt"
    assert prof.values["env_vars"] == {"X": "a-acct1", "Y": ""}
    assert prof.values["mounts"] == ["acct1:/m"]
    assert prof.values["startup_commands"] == ["echo ${oc.env:KEEP}"]  # escaped: the text itself


def test_an_unset_variable_without_default_names_key_line_and_fix(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NEMO_T_MISSING", raising=False)
    path = tmp_path / "env.toml"
    path.write_text('[p]\nexecutor = "slurm"\nenv_vars = { Z = "${oc.env:NEMO_T_MISSING}" }\n')
    with pytest.raises(envmod.EnvFileError, match="key 'env_vars.Z': environment variable NEMO_T_MISSING "
                                                  "is not set") as info:
        envmod.load_env_profile("p", path)
    assert info.value.line == 3 and info.value.key == "env_vars.Z"
    assert info.value.hint == "export NEMO_T_MISSING=..., or give a default: ${oc.env:NEMO_T_MISSING,DEFAULT}"


def test_an_empty_variable_name_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "env.toml"
    path.write_text('[p]\nexecutor = "slurm"\naccount = "${oc.env:}"\n')
    with pytest.raises(envmod.EnvFileError, match=r"key 'account': \$\{oc.env:\} needs an environment "
                                                  "variable name") as info:
        envmod.load_env_profile("p", path)
    assert info.value.line == 3


# ------------------------------------------------------------------ the file itself


@pytest.mark.parametrize(("text", "line", "message"), [
    ('[p]\nexecutor = "slurm"\nx = \n', 3, "invalid TOML: "),
    ('[p]\nexecutor = "slurm"\n[p', 3, "invalid TOML: "),
    ('name = 1\n[p]\n', 1, "key 'name' is outside any table"),
    ('[[p]]\na = 1\n', 1, "[[p]] is an array of tables; a profile is a single [p] table"),
])
def test_file_errors_name_their_line(tmp_path: Path, text: str, line: int, message: str) -> None:
    path = tmp_path / "env.toml"
    path.write_text(text)
    with pytest.raises(envmod.EnvFileError) as info:
        load_env_file(path)
    assert message in str(info.value) and info.value.line == line


def test_not_utf8_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "env.toml"
    path.write_bytes(b'[p]\nexecutor = "slurm"\naccount = "\xff"\n')
    with pytest.raises(envmod.EnvFileError, match="not UTF-8 text") as info:
        load_env_file(path)
    assert info.value.line == 3 and info.value.hint == "save the file as UTF-8"


def test_a_bom_is_ignored_and_sections_are_split_from_profiles(tmp_path: Path) -> None:
    path = tmp_path / "env.toml"
    path.write_text('\ufeff[wandb]\nproject = "p"\n\n[dev]\nexecutor = "local"\n', encoding="utf-8")
    ef = load_env_file(path)
    assert list(ef.profiles) == ["dev"]
    assert ef.sections["wandb"] == {"project": "p"} and ef.sections["cli"] == {}
    assert ef.keys() == ["dev", "wandb"] and "wandb" in ef and "cli" not in ef
    assert ef["cli"] == {} and ef.get("nope", 3) == 3
    assert ef.line_of("dev", "executor") == 5 and ef.line_of("dev", "nope", "deeper") == 4


# ------------------------------------------------------------------ every error checked whole


def _err(call: Any) -> EnvFileError:
    with pytest.raises(EnvFileError) as info:
        call()
    return info.value


def _whole(err: EnvFileError) -> tuple[str, str | None, int | None, str | None, str | None]:
    return err.problem, err.path, err.line, err.key, err.hint


def test_missing_and_unreadable_env_files(tmp_path: Path) -> None:
    missing = tmp_path / "nope.toml"
    assert _whole(_err(lambda: load_env_file(missing))) == (
        f"env file {str(missing)!r} does not exist", str(missing), None, None, CREATE_HINT)
    assert _whole(_err(lambda: load_env_file(tmp_path))) == (
        "env file is a directory, not a regular file", str(tmp_path), None, None,
        "give the path of a regular env file")
    fifo_parent = tmp_path / "f"
    fifo_parent.write_text("")
    notdir = fifo_parent / "env.toml"  # a path under a file: NotADirectoryError, an OSError
    assert _whole(_err(lambda: load_env_file(notdir))) == (
        "cannot read env file: Not a directory", str(notdir), None, None, None)


@pytest.mark.parametrize(("raw", "problem", "line"), [
    (b'[p]\nexecutor = "slurm"\nx = "a\n', "invalid TOML: Illegal character '\\n' (column 7)", 3),
    (b'[p]\nexecutor = "slurm"\nx = [\n', "invalid TOML: Invalid value (at end of file)", 4),
    (b'\n[p]\nx = "\xff"\n', "not UTF-8 text (invalid start byte)", 3),
    (b'\xff[p]\n', "not UTF-8 text (invalid start byte)", 1),
    (b'name = 1\n[p]\n', "key 'name' is outside any table; env.toml holds only [profile] tables "
                         "and the sections [wandb], [cli], [cache], [artifacts]", 1),
])
def test_file_errors_whole(tmp_path: Path, raw: bytes, problem: str, line: int) -> None:
    path = tmp_path / "env.toml"
    path.write_bytes(raw)
    err = _err(lambda: load_env_file(path))
    assert (err.problem, err.path, err.line) == (problem, str(path), line)
    if problem.startswith("key 'name'"):
        assert err.key == "name"


def test_values_nested_too_deeply(tmp_path: Path) -> None:
    path = tmp_path / "env.toml"
    path.write_text("[p]\nx = 1\ny = " + "[" * 3000 + "]" * 3000 + "\n")
    assert _whole(_err(lambda: load_env_file(path))) == (
        "invalid TOML: values nested too deeply", str(path), 3, None,
        "an env.toml value needs a few levels of nesting at most")


def test_the_env_file_is_discovered_when_not_given(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "env.toml"
    path.write_text('[dev]\nexecutor = "local"\n')
    monkeypatch.setenv("NEMOTRON_ENV_FILE", str(path))
    assert load_env_file().path == path
    assert envmod.load_env_profile("dev").path == path
    monkeypatch.delenv("NEMOTRON_ENV_FILE")
    monkeypatch.chdir(tmp_path / "..")
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / ".git").mkdir()
    monkeypatch.chdir(tmp_path / "empty")
    assert _err(load_env_file).problem.startswith("no env.toml was found; looked in ")
    assert _err(lambda: envmod.load_env_profile("dev")).problem.startswith(
        "profile 'dev' was requested but no env.toml was found")


def test_extends_errors_whole(tmp_path: Path) -> None:
    path = tmp_path / "env.toml"

    def load(text: str, name: str = "q") -> EnvFileError:
        path.write_text(text)
        return _err(lambda: envmod.load_env_profile(name, path))

    assert _whole(load('[p]\nexecutor="slurm"\n[q]\nextends = 3\n')) == (
        "key 'extends' in [q] must be a string (a profile name), got integer 3", str(path), 4, "extends", None)
    assert _whole(load('[p]\nexecutor="slurm"\n[wandb]\nproject="x"\n[q]\nextends = "wandb"\n')) == (
        "[q] extends [wandb], which is a special section, not a profile", str(path), 6, "extends",
        "valid: p, q")
    assert _whole(load('[pp]\nexecutor="slurm"\n[q]\nextends = "p"\n')) == (
        "[q] extends unknown profile 'p'", str(path), 4, "extends", "did you mean 'pp'?; valid: pp, q")
    assert _whole(load('[p]\nextends="q"\n[q]\nextends = "p"\n')) == (
        "extends cycle of 2 profile(s): p -> q -> p", str(path), 2, "extends",
        "one profile of the cycle must not extend another")


def test_unknown_profile_errors_whole(tmp_path: Path) -> None:
    path = tmp_path / "env.toml"
    path.write_text('[wandb]\nproject="x"\n')
    assert _whole(_err(lambda: envmod.load_env_profile("wandb", path))) == (
        "[wandb] is a special section, not an execution profile", str(path), 1, None,
        "the file defines no profiles")
    assert _whole(_err(lambda: envmod.load_env_profile("dev", path))) == (
        "unknown profile 'dev': the file defines no profiles", str(path), None, None, None)
    path.write_text('[dev]\nexecutor="local"\n[wandb]\nproject="x"\n')
    assert _whole(_err(lambda: envmod.load_env_profile("wandb", path))) == (
        "[wandb] is a special section, not an execution profile", str(path), 3, None, "valid: dev")
    assert _whole(_err(lambda: envmod.load_env_profile("dve", path))) == (
        "unknown profile 'dve'", str(path), None, None, "did you mean 'dev'?; valid: dev")


def test_an_empty_variable_name_names_file_and_key(tmp_path: Path) -> None:
    path = tmp_path / "env.toml"
    path.write_text('[p]\nexecutor = "slurm"\naccount = "${oc.env:}"\n')
    err = _err(lambda: envmod.load_env_profile("p", path))
    assert (err.path, err.line, err.key) == (str(path), 3, "account")


@pytest.mark.parametrize(("default", "value"), [("''", ""), ('""', ""), ("'a'", "a"), ("XaX", "XaX"),
                                                ("'a\"", "'a\"")])
def test_oc_env_default_quotes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, default: str, value: str) -> None:
    monkeypatch.delenv("NEMO_T_UNSET", raising=False)
    path = tmp_path / "env.toml"
    text = json.dumps(f"${{oc.env:NEMO_T_UNSET,{default}}}")  # a TOML basic string
    path.write_text(f'[p]\nexecutor = "local"\nenv_vars = {{ X = {text} }}\n')
    assert envmod.load_env_profile("p", path).values["env_vars"] == {"X": value}


def test_a_note_about_a_merged_value_cites_the_layer_that_set_it(tmp_path: Path) -> None:
    path = tmp_path / "env.toml"
    path.write_text('[base]\nexecutor="local"\npackager="hybrid"\n[dev]\nextends="base"\n')
    prof = envmod.load_env_profile("dev", path)
    (note,) = prof.notes
    assert (note.path, note.line) == (str(path), 3)
    assert str(note).startswith(f'{path}:3: [dev] packager = "hybrid" names no sub-packagers')
    assert str(note).endswith('to choose them add e.g. [dev.packagers.code] packager = "git"')
    assert "packager" not in prof.values and "packager" not in prof.sources


def test_a_source_outside_the_cwd_is_labelled_with_its_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "cwd").mkdir()
    monkeypatch.chdir(tmp_path / "cwd")
    assert envmod.Source("dev", str(tmp_path / "env.toml"), 3).label == f"{tmp_path / 'env.toml'}:3 [dev]"
    assert envmod.Source("dev", str(tmp_path / "cwd" / "env.toml"), 3).label == "env.toml:3 [dev]"


def test_an_env_file_reads_like_the_reference_dict(tmp_path: Path) -> None:
    path = tmp_path / "env.toml"
    path.write_text('[dev]\nexecutor = "local"\n[wandb]\nproject = "p"\n')
    ef = load_env_file(path)
    assert list(ef) == ["dev", "wandb"] and ef.keys() == ["dev", "wandb"]
    assert ef.items() == [("dev", {"executor": "local"}), ("wandb", {"project": "p"})]
    assert ef.get("dev") == {"executor": "local"} and ef.get("nope", 5) == 5
    assert ef["cli"] == {} and "cli" not in ef
    with pytest.raises(KeyError) as info:
        ef["nope"]
    assert info.value.args == ("nope",)


# ------------------------------------------------------------------ the resolved profile


def _profile(tmp_path: Path, text: str, name: str = "dev") -> envmod.EnvProfile:
    path = tmp_path / "env.toml"
    path.write_text(text)
    return envmod.load_env_profile(name, path)


def test_a_synonym_is_noted_and_cited_by_the_users_spelling(tmp_path: Path) -> None:
    prof = _profile(tmp_path, '[dev]\nexecutor="slurm"\naccount="a"\ncontainer="img"\n'
                              '[dev.env_vars]\n\nA = "1"\n')
    path = str(tmp_path / "env.toml")
    (note,) = prof.notes
    assert str(note) == f"{path}:4: [dev] container is read as container_image (the reference's synonym)"
    assert (prof.name, prof.path, prof.chain) == ("dev", tmp_path / "env.toml", ["dev"])
    assert prof.sources["container_image"] == envmod.Source("dev", path, 4)
    assert prof.sources["env_vars"] == envmod.Source("dev", path, 5)
    assert prof.sources["env_vars.A"] == envmod.Source("dev", path, 7)


def test_an_invalid_synonym_value_is_named_as_written(tmp_path: Path) -> None:
    err = _err(lambda: _profile(tmp_path, '[dev]\nexecutor="slurm"\naccount="a"\ncontainer="bad img"\n'))
    assert err.problem.startswith("key 'container' in [dev]: 'bad img' cannot be used in the batch script")
    assert (err.path, err.line, err.key) == (str(tmp_path / "env.toml"), 4, "container")


def test_nproc_per_node_disagreeing_with_gpus_per_node(tmp_path: Path) -> None:
    err = _err(lambda: _profile(tmp_path, '[dev]\nexecutor="slurm"\naccount="a"\nnproc_per_node=2\n'
                                          'gpus_per_node=4\n'))
    assert _whole(err) == (
        "[dev] sets nproc_per_node = 2 and gpus_per_node = 4; nproc_per_node is an alias of "
        "gpus_per_node, so they must agree", str(tmp_path / "env.toml"), 4, "nproc_per_node",
        "keep only gpus_per_node")


def test_a_merged_profile_is_validated_with_its_lines(tmp_path: Path) -> None:
    err = _err(lambda: _profile(tmp_path, '# c\n[dev]\nexecutor="slurm"\ntunnel="ssh"\n'))
    assert err.problem == '[dev]: tunnel = "ssh" requires host (the login node to submit from)'
    assert (err.path, err.line) == (str(tmp_path / "env.toml"), 4)


def test_sources_of_dropped_keys_go_and_the_others_stay(tmp_path: Path) -> None:
    prof = _profile(tmp_path, '[dev]\nexecutor="local"\npackager="hybrid"\n')
    assert sorted(prof.sources) == ["executor"]


@pytest.mark.parametrize(("values", "mode", "partition"), [
    ({"partition": "p", "run_partition": "r", "batch_partition": "b"}, "run", "r"),
    ({"partition": "p", "run_partition": "r", "batch_partition": "b"}, "batch", "b"),
    ({"partition": "p", "run_partition": "r", "batch_partition": "b"}, "other", "p"),
    ({"partition": "p", "run_partition": ""}, "run", "p"),
    ({"partition": "p"}, "batch", "p"),
    ({"batch_partition": "b"}, "run", None),
])
def test_partition_for(values: dict[str, Any], mode: str, partition: str | None) -> None:
    assert partition_for(values, mode) == partition
    prof = envmod.EnvProfile(name="x", path=None, chain=["x"], values=values, sources={})
    assert prof.partition_for(mode) == partition


def test_a_profile_reads_like_the_reference_dict(tmp_path: Path) -> None:
    prof = _profile(tmp_path, '[dev]\nexecutor="slurm"\naccount="a"\n')
    assert list(prof) == ["executor", "account"] and prof.keys() == ["executor", "account"]
    assert prof.items() == [("executor", "slurm"), ("account", "a")]
    assert prof["account"] == "a"
    with pytest.raises(KeyError) as info:
        prof["no_such_key"]
    assert info.value.args == ("no_such_key",)


def test_to_dict_and_redaction(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    secret = "plain-secret-abcdefghijklmnop1234"  # not credential-shaped: a startup command may show it
    prof = _profile(tmp_path, f'[dev]\nexecutor="slurm"\nenv_vars={{HF_TOKEN="{secret}"}}\n'
                              f'startup_commands=["echo {secret}"]\n')
    monkeypatch.chdir(tmp_path)
    plain = prof.to_dict()
    assert plain == {
        "name": "dev", "path": str(tmp_path / "env.toml"), "chain": ["dev"],
        "values": {"executor": "slurm", "env_vars": {"HF_TOKEN": secret}, "startup_commands": [f"echo {secret}"]},
        "sources": {"env_vars": "env.toml:3 [dev]", "env_vars.HF_TOKEN": "env.toml:3 [dev]",
                    "executor": "env.toml:2 [dev]", "startup_commands": "env.toml:4 [dev]"},
        "notes": [],
    }
    plain["values"]["env_vars"]["HF_TOKEN"] = "changed"
    assert prof.values["env_vars"]["HF_TOKEN"] == secret  # a copy
    # the value is masked wherever it appears, not only under its secret-looking name
    assert prof.to_dict(redacted=True)["values"] == {
        "executor": "slurm", "env_vars": {"HF_TOKEN": "***REDACTED***"},
        "startup_commands": ["echo ***REDACTED***"]}
    assert envmod.EnvProfile(name="x", path=None, chain=[], values={}, sources={}).to_dict()["path"] is None


def test_notes_are_strings_in_to_dict(tmp_path: Path) -> None:
    prof = _profile(tmp_path, '[dev]\nexecutor="slurm"\naccount="a"\ncontainer="img"\n')
    assert prof.to_dict()["notes"] == [str(prof.notes[0])]


def test_parse_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from types import SimpleNamespace as NS

    monkeypatch.delenv("NEMOTRON_ENV_FILE", raising=False)
    (tmp_path / "proj" / ".git").mkdir(parents=True)
    monkeypatch.chdir(tmp_path / "proj")
    path = tmp_path / "env.toml"
    path.write_text('[dev]\nexecutor="local"\n')
    assert envmod.parse_env(NS(profile=None, env_file=None)) is None
    prof = envmod.parse_env(NS(profile="dev", env_file=str(path)))
    assert (prof.name, prof.path, prof.values) == ("dev", path, {"executor": "local"})
    err = _err(lambda: envmod.parse_env(NS(profile="dev", env_file=None)))
    assert err.problem.startswith("profile 'dev' was requested but no env.toml was found")
    # a named env file that is missing is an error even without a profile
    assert _err(lambda: envmod.parse_env(NS(profile=None, env_file=str(tmp_path / "nope.toml")))).problem
    monkeypatch.setenv("NEMOTRON_ENV_FILE", str(tmp_path / "nope.toml"))
    assert _err(lambda: envmod.parse_env(NS(profile=None, env_file=None))).problem
    monkeypatch.setenv("NEMOTRON_ENV_FILE", str(path))
    assert envmod.parse_env(NS(profile="dev", env_file=None)).path == path
    # the special sections are checked too: a typo there fails the command now
    path.write_text('[dev]\nexecutor="local"\n[wandb]\nprojekt="x"\n')
    err = _err(lambda: envmod.parse_env(NS(profile="dev", env_file=str(path))))
    assert "projekt" in err.problem and err.line == 4


def test_a_secret_value_without_a_credential_shape_is_masked_everywhere(tmp_path: Path) -> None:
    """Found by its key (MY_PASSWORD), then masked wherever it appears."""
    prof = _profile(tmp_path, '[dev]\nexecutor="slurm"\nenv_vars={MY_PASSWORD="plainvalue123"}\n'
                              'startup_commands=["echo plainvalue123"]\n')
    assert prof.redacted_values() == {
        "executor": "slurm", "env_vars": {"MY_PASSWORD": "***REDACTED***"},
        "startup_commands": ["echo ***REDACTED***"]}


def test_a_near_miss_of_a_special_section_lists_the_profiles(tmp_path: Path) -> None:
    path = tmp_path / "env.toml"
    path.write_text('[wandbx]\nexecutor="local"\n[wandb]\nproject="x"\n[q]\nextends = "wandb"\n')
    assert _err(lambda: envmod.load_env_profile("q", path)).hint == "did you mean 'wandbx'?; valid: q, wandbx"
    assert _err(lambda: envmod.load_env_profile("wandb", path)).hint == "did you mean 'wandbx'?; valid: q, wandbx"


# ------------------------------------------------------------------ EnvProfile as the reference's profile
# docs: a profile is a read-only mapping (issue 11); env.nodes reads a profile key.


def test_a_profile_is_true_even_with_no_keys_set() -> None:
    """``if env:`` must not mistake a profile that sets nothing for no profile."""
    empty = envmod.EnvProfile(name="x", path=None, chain=["x"], values={}, sources={})
    assert len(empty) == 0 and bool(empty) is True


def test_profiles_are_equal_when_read_alike(tmp_path: Path) -> None:
    text = '[dev]\nexecutor="slurm"\naccount="a"\n[other]\nexecutor="slurm"\naccount="b"\n'
    assert _profile(tmp_path, text) == _profile(tmp_path, text)
    assert (_profile(tmp_path, text) == _profile(tmp_path, text, "other")) is False
    assert _profile(tmp_path, text) != _profile(tmp_path, text, "other")


def test_a_profile_key_reads_as_an_attribute(tmp_path: Path) -> None:
    prof = _profile(tmp_path, '[dev]\nexecutor="slurm"\naccount="a"\nnodes=4\n')
    assert (prof.nodes, prof.account) == (4, "a")
    unset = _profile(tmp_path, '[dev]\nexecutor="slurm"\n')
    assert (unset.time, unset.port, unset.nodes) == ("04:00:00", 22, None)  # unset: the documented default


def test_a_name_that_is_no_profile_key_is_an_attribute_error(tmp_path: Path) -> None:
    prof = _profile(tmp_path, '[dev]\nexecutor="slurm"\n')
    with pytest.raises(AttributeError) as info:
        _ = prof.nodez
    assert str(info.value) == "'nodez' is not a profile key"
    assert hasattr(prof, "nodez") is False


def test_a_private_name_is_never_a_profile_key(tmp_path: Path) -> None:
    """Names with ``_`` (what IPython, copy and pickle probe) are plain missing attributes."""
    prof = _profile(tmp_path, '[dev]\nexecutor="slurm"\n')
    with pytest.raises(AttributeError) as info:
        _ = prof._repr_html_
    assert str(info.value) == "_repr_html_"


def test_a_profile_being_built_has_no_profile_keys() -> None:
    """Before ``__init__`` has set ``values`` (unpickling, copy) no name is looked up in it."""
    bare = envmod.EnvProfile.__new__(envmod.EnvProfile)
    assert hasattr(bare, "nodes") is False
    with pytest.raises(AttributeError) as info:
        _ = bare.nodes
    assert str(info.value) == "nodes"
