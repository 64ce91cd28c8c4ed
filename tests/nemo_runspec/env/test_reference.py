"""env.toml written for the reference system (nemo_runspec.env.reference): accepted, mapped, or
refused in one line naming file, line, key and the fix.

The examples are the reference's documented forms, rewritten here (the reference docs are not
on users' machines, so nothing is read from them at test time).
"""

from __future__ import annotations

import pytest

from nemo_runspec.env import load_env_profile
from nemo_runspec.env.reference import SYNONYMS
from nemo_runspec.errors import EnvFileError
from nemo_runspec.secrets import REDACTED
from tests.nemo_runspec.env.env_toml import line_no, write
from tests.nemo_runspec.env.reference_examples import EXAMPLES, REFUSED, TOKEN


def _load(tmp_path, text, name):
    path = write(tmp_path / "env.toml", text)
    return path, load_env_profile(name, path)


# --------------------------------------------------------------------------- synonyms


def test_container_is_container_image_at_its_own_line(tmp_path):
    path, prof = _load(tmp_path, """
        [c]
        executor = "slurm"
        container = "nvcr.io/nvidia/nemo:25.11"
        """, "c")
    assert prof.values["container_image"] == "nvcr.io/nvidia/nemo:25.11"
    assert "container" not in prof.values
    assert prof.sources["container_image"].line == line_no(path, "container =")
    assert any("container is read as container_image" in str(n) for n in prof.notes)


def test_child_container_overrides_parent_container_image(tmp_path):
    _, prof = _load(tmp_path, """
        [base]
        container_image = "img:parent"
        [child]
        extends = "base"
        container = "img:child"
        """, "child")
    assert prof.values["container_image"] == "img:child"


def test_container_and_container_image_together_image_wins_with_a_note(tmp_path):
    path, prof = _load(tmp_path, """
        [c]
        container_image = "img:a"
        container = "img:b"
        """, "c")
    assert prof.values["container_image"] == "img:a"
    note = next(n for n in prof.notes if "both" in n.text)
    assert note.line == line_no(path, "container =") and not note.warn


def test_bad_container_value_names_the_key_the_user_wrote(tmp_path):
    path = write(tmp_path / "env.toml", '[c]\ndescription = "x"\ncontainer = "img with spaces"\n')
    with pytest.raises(EnvFileError) as e:
        load_env_profile("c", path)
    msg = str(e.value)
    assert msg.startswith(f"{path}:3:") and "'container'" in msg and "container_image" not in msg
    assert "\n" not in msg


# --------------------------------------------------------------------------- env_vars as a list


def test_env_vars_list_becomes_a_table_and_secrets_stay_secret(tmp_path):
    path, prof = _load(tmp_path, f"""
        [c]
        env_vars = ["NCCL_DEBUG=INFO", "HF_TOKEN={TOKEN}", "OPTS=a=b", "EMPTY="]
        """, "c")
    assert prof.values["env_vars"] == {"NCCL_DEBUG": "INFO", "HF_TOKEN": TOKEN, "OPTS": "a=b", "EMPTY": ""}
    assert prof.sources["env_vars.HF_TOKEN"].line == line_no(path, "env_vars")
    shown = prof.redacted_values()["env_vars"]
    assert shown["HF_TOKEN"] == REDACTED and shown["NCCL_DEBUG"] == "INFO"
    assert TOKEN not in repr(prof.to_dict(redacted=True))


def test_env_vars_list_merges_key_by_key_with_a_parent_table(tmp_path):
    _, prof = _load(tmp_path, """
        [base]
        env_vars = { A = "1", B = "2" }
        [child]
        extends = "base"
        env_vars = ["B=3", "C=4"]
        """, "child")
    assert prof.values["env_vars"] == {"A": "1", "B": "3", "C": "4"}


def test_env_vars_list_entries_use_oc_env(tmp_path, monkeypatch):
    monkeypatch.setenv("MY_HF", TOKEN)
    _, prof = _load(tmp_path, '[c]\nenv_vars = ["HF_TOKEN=${oc.env:MY_HF}"]\n', "c")
    assert prof.values["env_vars"] == {"HF_TOKEN": TOKEN}


@pytest.mark.parametrize(("entry", "shown"), [
    ('"NCCL_DEBUG"', "'NCCL_DEBUG'"),
    ("5", "integer"),
    ('"=value"', "'=value'"),
    (f'"{TOKEN}"', "value hidden"),
])
def test_env_vars_list_bad_entry_is_one_line_with_the_fix(tmp_path, entry, shown):
    path = write(tmp_path / "env.toml", f'[c]\ndescription = "x"\nenv_vars = ["A=1", {entry}]\n')
    with pytest.raises(EnvFileError) as e:
        load_env_profile("c", path)
    msg = str(e.value)
    assert msg.startswith(f"{path}:3:"), msg
    assert "entry 1 of 'env_vars'" in msg and "NAME=value" in msg and shown in msg
    assert TOKEN not in msg and "\n" not in msg


def test_env_vars_list_bad_name_is_refused(tmp_path):
    path = write(tmp_path / "env.toml", '[c]\nenv_vars = ["MY-VAR=1"]\n')
    with pytest.raises(EnvFileError) as e:
        load_env_profile("c", path)
    assert str(e.value).startswith(f"{path}:2:") and "env_vars" in str(e.value)


# --------------------------------------------------------------------------- other keys


def test_dry_run_and_detach_are_profile_keys(tmp_path):
    _, prof = _load(tmp_path, "[c]\ndry_run = true\ndetach = false\n", "c")
    assert prof.values["dry_run"] is True and prof.values["detach"] is False


def test_dry_run_must_be_a_boolean(tmp_path):
    path = write(tmp_path / "env.toml", '[c]\ndescription = "x"\ndry_run = "yes"\n')
    with pytest.raises(EnvFileError) as e:
        load_env_profile("c", path)
    assert str(e.value).startswith(f"{path}:3:") and "boolean" in str(e.value)


def test_bare_hybrid_packager_is_the_default_packager_with_a_warning(tmp_path):
    path, prof = _load(tmp_path, '[c]\nexecutor = "slurm"\npackager = "hybrid"\n', "c")
    assert "packager" not in prof.values and "packager" not in prof.sources
    warn = [n for n in prof.notes if n.warn]
    assert len(warn) == 1 and warn[0].line == line_no(path, "packager")
    assert "[c.packagers.code]" in warn[0].text


def test_hybrid_with_sub_packagers_from_a_child_is_kept(tmp_path):
    _, prof = _load(tmp_path, """
        [base]
        packager = "hybrid"
        [child]
        extends = "base"
        [child.packagers.code]
        packager = "git"
        """, "child")
    assert prof.values["packager"] == "hybrid" and not [n for n in prof.notes if n.warn]


def test_auto_mount_entries_become_git_mounts(tmp_path):
    path, prof = _load(tmp_path, """
        [c]
        mounts = ["/lustre:/lustre", "${auto_mount:git+https://example.com/x.git@main,/opt/x}"]
        """, "c")
    assert prof.values["mounts"] == ["/lustre:/lustre"]
    assert prof.values["git_mounts"] == [{"url": "https://example.com/x.git", "ref": "main",
                                          "target": "/opt/x", "name": "x"}]
    assert prof.sources["git_mounts"].line == line_no(path, "mounts")


def test_a_bad_auto_mount_entry_is_one_line_at_its_line(tmp_path):
    with pytest.raises(EnvFileError) as e:
        _load(tmp_path, """
            [c]
            mounts = ["${auto_mount:git+https://example.com/x.git@main;id,/opt/x}"]
            """, "c")
    assert "env.toml:2: [c] mounts[0]: auto_mount ref 'main;id'" in str(e.value)  # the mounts line


@pytest.mark.parametrize(("executor", "needs"), [("docker", "container_image"), ("dgxcloud", "container_image"),
                                                 ("lepton", "container_image")])
def test_reference_executors_name_what_they_need(tmp_path, executor, needs):
    path = write(tmp_path / "env.toml", f'[c]\ndescription = "x"\nexecutor = "{executor}"\n')
    with pytest.raises(EnvFileError) as e:
        load_env_profile("c", path)
    msg = str(e.value)
    assert msg.startswith(f"{path}:3:") and f'executor = "{executor}" requires {needs}' in msg
    assert "\n" not in msg


def test_reference_executors_are_read(tmp_path):
    path = write(tmp_path / "env.toml", """
        [d]
        executor = "dgxcloud"
        container = "img"
        base_url = "https://x.invalid"
        kube_apiserver_url = "https://k.invalid"
        app_id = "id"
        app_secret = "${oc.env:DGX_TEST_SECRET,sekrit-value}"
        project_name = "p"
        pvc_nemo_run_dir = "/ws/nr"
        pvcs = [{ claimName = "ws", path = "/ws" }]
        [s]
        executor = "skypilot"
        cloud = "kubernetes"
        """)
    prof = load_env_profile("d", path)
    assert prof.values["client_id"] == "id" and prof.values["client_secret"] == "sekrit-value"
    assert "sekrit-value" not in str(prof.to_dict(redacted=True))
    assert any("app_secret is read as client_secret" in n.text for n in prof.notes)
    assert load_env_profile("s", path).values["cloud"] == "kubernetes"


@pytest.mark.parametrize(("key", "ours"), [
    ('subpath = "src"', "packager_subpath"),
    ('include_pattern = "src/**/*.py"', "packager_include_pattern"),
    ('relative_path = "."', "packager_relative_path"),
])
def test_packager_options_under_nemo_runs_names_are_ours(tmp_path, key, ours):
    path = write(tmp_path / "env.toml", f'[c]\ndescription = "x"\n{key}\n')
    prof = load_env_profile("c", path)
    name, value = key.split(" = ")
    assert prof.values[ours] == value.strip('"') and name not in prof.values
    assert prof.sources[ours].line == 3
    assert [str(n) for n in prof.notes] == [f"{path}:3: [c] {name} is read as {ours} (the reference's synonym)"]


def test_packager_option_in_both_spellings_ours_wins_with_a_note(tmp_path):
    path = write(tmp_path / "env.toml", '[c]\npackager_subpath = "src"\nsubpath = "lib"\n')
    prof = load_env_profile("c", path)
    assert prof.values["packager_subpath"] == "src"
    assert any("sets both subpath and packager_subpath; packager_subpath wins" in n.text for n in prof.notes)


def test_synonyms_are_not_profile_keys_of_their_own():
    from nemo_runspec.env import PROFILE_KEYS

    assert not set(SYNONYMS) & set(PROFILE_KEYS) and set(SYNONYMS.values()) <= set(PROFILE_KEYS)


# --------------------------------------------------------------------------- the reference's examples


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_reference_examples_load_with_the_same_meaning(tmp_path, name):
    text, expected = EXAMPLES[name]
    path = write(tmp_path / "env.toml", text)
    from nemo_runspec.env import load_env_file, read_sections

    ef = load_env_file(path)
    read_sections(ef)
    for profile in ef.profiles:
        load_env_profile(profile, ef)
    for profile, values in expected.items():
        prof = load_env_profile(profile, ef)
        for key, value in values.items():
            assert prof.values[key] == value, (profile, key)
        if profile == "hybrid":
            assert "packager" not in prof.values


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_reference_forms_that_cannot_work_are_one_line_with_the_fix(tmp_path, name):
    text, profile, line, says = REFUSED[name]
    path = write(tmp_path / "env.toml", text)
    with pytest.raises(EnvFileError) as e:
        load_env_profile(profile, path)
    msg = str(e.value)
    assert msg.startswith(f"{path}:{line}:") and says in msg and "\n" not in msg, msg


def test_empty_job_name_prefix_is_refused_since_no_account_may_stand_in(tmp_path):
    # nemo-run builds a missing prefix from `account`, which a profile may now leave out
    path = write(tmp_path / "env.toml", '[c]\nexecutor = "slurm"\njob_name_prefix = ""\n')
    with pytest.raises(EnvFileError) as e:
        load_env_profile("c", path)
    assert str(e.value).startswith(f"{path}:3:") and "job_name_prefix" in str(e.value)
