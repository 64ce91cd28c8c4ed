"""env.toml reading and `extends` (docs/env-toml.md): the rules mutation testing found
unstated (docs/dev/mutation.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from nemo_runspec import env as envmod
from nemo_runspec.env.file import load_env_file

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
                    'env_vars = { X = "a-${oc.env: NEMO_T_ACCT }-\\\\${oc.env:KEEP}", Y = "${oc.env:NEMO_T_MISSING,}" }\n'
                    'mounts = ["${oc.env:NEMO_T_ACCT}:/m"]\n')
    prof = envmod.load_env_profile("p", path)
    assert prof.values["account"] == "acct1"
    assert prof.values["partition"] == "dflt"
    assert prof.values["env_vars"] == {"X": "a-acct1-${oc.env:KEEP}", "Y": ""}
    assert prof.values["mounts"] == ["acct1:/m"]


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
