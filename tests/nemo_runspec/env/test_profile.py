"""Tests for nemo_runspec.env.profile (extends, redaction, the example file)."""

from __future__ import annotations

from pathlib import Path

import pytest

from nemo_runspec import env as envmod
from nemo_runspec.env import (
    EnvFile,
    get_artifacts_config,
    get_cache_config,
    get_wandb_config,
    load_env_file,
    load_env_profile,
)
from nemo_runspec.errors import EnvFileError
from nemo_runspec.secrets import REDACTED
from tests.import_probes import imported_after
from tests.nemo_runspec.env.env_toml import SIMPLE, line_no, write

REPO = Path(__file__).resolve().parents[3]


# --------------------------------------------------------------------------- extends


DEEP = """
[root]
executor = "slurm"
account = "acct"
mounts = ["/a:/a", "/b:/b"]
env_vars = { A = "root", B = "root" }
sbatch_options = { reservation = "r1", "gpu-bind" = "none" }

[mid]
extends = "root"
env_vars = { B = "mid", C = "mid" }
nodes = 2

[leaf]
extends = "mid"
mounts = ["/c:/c"]
env_vars = { C = "leaf" }
sbatch_options = { reservation = "r2" }
description = "leaf profile"
"""


def test_extends_deep_merge_several_levels(tmp_path):
    path = write(tmp_path / "env.toml", DEEP)
    prof = load_env_profile("leaf", path)
    assert prof.chain == ["leaf", "mid", "root"]
    assert prof.values["env_vars"] == {"A": "root", "B": "mid", "C": "leaf"}
    assert prof.values["mounts"] == ["/c:/c"]  # lists replaced, not concatenated
    assert prof.values["sbatch_options"] == {"reservation": "r2", "gpu-bind": "none"}
    assert prof.values["nodes"] == 2 and prof.values["account"] == "acct"
    assert prof.values["extends"] == "mid"


def test_sources_point_at_defining_profile_and_line(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    path = write(tmp_path / "env.toml", DEEP)
    prof = load_env_profile("leaf", path)
    acc = prof.sources["account"]
    assert (acc.profile, acc.line) == ("root", line_no(path, 'account = "acct"'))
    assert acc.label == f"env.toml:{acc.line} [root]"
    assert str(acc) == acc.label
    assert prof.sources["nodes"].profile == "mid"
    assert prof.sources["env_vars.A"].profile == "root"
    assert prof.sources["env_vars.B"].profile == "mid"
    assert prof.sources["env_vars.C"].profile == "leaf"
    assert prof.sources["mounts"].line == line_no(path, 'mounts = ["/c:/c"]')
    assert prof.sources["sbatch_options.gpu-bind"].profile == "root"


def test_unknown_parent_did_you_mean(tmp_path):
    path = write(tmp_path / "env.toml", '[base]\naccount="a"\n[dev]\nextends = "bsae"\n')
    with pytest.raises(EnvFileError) as e:
        load_env_profile("dev", path)
    msg = str(e.value)
    assert msg.startswith(f"{path}:4:") and "'bsae'" in msg and "did you mean 'base'" in msg


def test_cycle_names_the_chain(tmp_path):
    path = write(
        tmp_path / "env.toml",
        '[a]\nextends = "b"\n[b]\nextends = "c"\n[c]\nextends = "a"\n[x]\nextends = "x"\n',
    )
    with pytest.raises(EnvFileError) as e:
        load_env_profile("a", path)
    assert "a -> b -> c -> a" in str(e.value)
    with pytest.raises(EnvFileError) as e:
        load_env_profile("x", path)
    assert "x -> x" in str(e.value)


def test_reserved_sections_not_profiles(tmp_path):
    path = write(tmp_path / "env.toml", '[wandb]\nproject="p"\n[dev]\nextends = "wandb"\n[ok]\n')
    with pytest.raises(EnvFileError) as e:
        load_env_profile("wandb", path)
    assert "special section" in str(e.value) and "ok" in str(e.value)
    with pytest.raises(EnvFileError) as e:
        load_env_profile("dev", path)
    assert str(e.value).startswith(f"{path}:4:") and "[wandb]" in str(e.value)


def test_unknown_profile_lists_available(tmp_path):
    path = write(tmp_path / "env.toml", SIMPLE)
    with pytest.raises(EnvFileError) as e:
        load_env_profile("deb", path)
    msg = str(e.value)
    assert "'deb'" in msg and "did you mean 'dev'" in msg and "base" in msg


# --------------------------------------------------------------------------- secrets / to_dict


def test_redaction_of_secret_env_vars(tmp_path, monkeypatch):
    monkeypatch.setenv("SOME_TOKEN_SRC", "plain-secret-abcdefghijklmnopqrstuvwxyz123")
    path = write(
        tmp_path / "env.toml",
        '[p]\nenv_vars = { HF_TOKEN = "${oc.env:SOME_TOKEN_SRC}", PLAIN = "ok" }\n'
        'startup_commands = ["echo using ${oc.env:SOME_TOKEN_SRC}"]\n',
    )
    prof = load_env_profile("p", path)
    secret = "plain-secret-abcdefghijklmnopqrstuvwxyz123"
    assert prof.values["env_vars"]["HF_TOKEN"] == secret  # real value for execution
    shown = prof.to_dict(redacted=True)
    assert secret not in repr(shown)
    assert shown["values"]["env_vars"]["HF_TOKEN"] == REDACTED
    assert shown["values"]["env_vars"]["PLAIN"] == "ok"
    assert shown["chain"] == ["p"] and shown["sources"]["env_vars.PLAIN"].endswith("[p]")
    assert secret in repr(prof.to_dict())


# --------------------------------------------------------------------------- example + import cost


def test_example_file_loads_every_profile(monkeypatch):
    example = REPO / "env.toml.example"
    ef = load_env_file(example)
    assert isinstance(ef, EnvFile) and len(ef.profiles) >= 4
    slurm = 0
    for name in ef.profiles:
        prof = load_env_profile(name, ef)
        slurm += prof.executor == "slurm"
    assert slurm >= 2
    assert any(load_env_profile(n, ef).get("tunnel") == "ssh" for n in ef.profiles)
    assert any(
        load_env_profile(n, ef).values.get("run_partition") and len(load_env_profile(n, ef).chain) > 1
        for n in ef.profiles
    )
    assert get_wandb_config(ef) and get_artifacts_config(ef) and get_cache_config(ef)


def test_import_is_light():
    out = imported_after(
        "import nemo_runspec.env",
        ("pydantic", "omegaconf", "nemo_run", "ray", "torch", "wandb", "rich"),
    )
    assert out.stdout.strip() == ""


def test_profile_keys_cover_spec():
    spec = (
        "executor extends description account partition run_partition batch_partition nodes "
        "ntasks_per_node gpus_per_node nproc_per_node cpus_per_task mem time exclusive qos "
        "constraint exclude gres container_image mounts env_vars startup_commands retries "
        "job_name_prefix srun_args sbatch_options packager packager_include_pattern "
        "packager_relative_path packager_subpath packagers check_uncommitted include_submodules tunnel host user "
        "port identity remote_job_dir job_dir workdir squash_dir dependency_type ray_port_base ray_timeout "
        "local_nproc dry_run detach secret_env_vars public_env_vars resilience git_mounts profiling "
        "gpu_type precision max_array_size max_parallel"
    ).split()
    from nemo_runspec.env.executor_keys import key_readers, lenient

    # the keys of nemo-run's other executors (their backends declare them; docs/env-toml.md)
    spec += [k for k, users in key_readers().items() if lenient().isdisjoint(users)]
    assert set(envmod.PROFILE_KEYS) == set(spec)
    assert "setup" not in envmod.PROFILE_KEYS


def test_hybrid_sub_packagers_accept_code_and_self_contained_with_flags(tmp_path):
    path = write(
        tmp_path / "env.toml",
        """
        [h]
        packager = "hybrid"
        [h.packagers.main]
        packager = "git"
        check_uncommitted = false
        include_submodules = false
        [h.packagers.tree]
        packager = "code"
        [h.packagers.script]
        packager = "self_contained"
        [h.packagers.lib]
        packager = "git"
        include_submodules = true
        """,
    )
    prof = load_env_profile("h", path)
    subs = prof.values["packagers"]
    assert subs["main"]["packager"] == "git" and subs["tree"]["packager"] == "code"
    assert subs["main"]["check_uncommitted"] is False
    assert subs["main"]["include_submodules"] is False
    assert subs["script"]["packager"] == "self_contained"
    assert subs["lib"]["include_submodules"] is True


@pytest.mark.parametrize(
    "line,key",
    [
        ('packager = "hybird"', "packager"),
        ('packager = "git"\ninclude_submodules = "yes"', "include_submodules"),
        ('packager = "git"\ncheck_uncommitted = 1', "check_uncommitted"),
    ],
)
def test_sub_packager_bad_values_are_errors(tmp_path, line, key):
    path = write(tmp_path / "env.toml", '[h]\npackager = "hybrid"\n[h.packagers.x]\n' + line + "\n")
    with pytest.raises(EnvFileError) as ei:
        load_env_profile("h", path)
    assert key in str(ei.value)
    assert str(path) in str(ei.value)


def test_workdir_key(tmp_path):
    path = write(tmp_path / "env.toml", '[n]\npackager = "none"\nworkdir = "/lustre/code/nemotron"\n')
    prof = load_env_profile("n", path)
    assert prof.values["workdir"] == "/lustre/code/nemotron"
    bad = write(tmp_path / "bad.toml", "[n]\nworkdir = 3\n")
    with pytest.raises(EnvFileError, match="workdir"):
        load_env_profile("n", bad)


def test_ray_keys_and_timeout_default(tmp_path):
    path = write(tmp_path / "env.toml", "[r]\nray_port_base = 21000\n[d]\nexecutor = \"local\"\n")
    prof = load_env_profile("r", path)
    assert prof.values["ray_port_base"] == 21000
    assert "ray_timeout" not in prof.values
    assert prof.get("ray_timeout") == 300  # documented default: seconds to wait for Ray nodes
    for bad in ("ray_timeout = 0", "ray_port_base = 80", 'ray_timeout = "300"'):
        p = write(tmp_path / "bad.toml", "[r]\n" + bad + "\n")
        with pytest.raises(EnvFileError, match=bad.split()[0]):
            load_env_profile("r", p)


@pytest.mark.parametrize(("option", "key"), [("nodes", "nodes"), ("time", "time"), ("gpus-per-node", "gpus_per_node"),
                                             ("job-name", "job_name_prefix")])
def test_sbatch_options_cannot_shadow_first_class_keys(tmp_path, option, key):
    path = tmp_path / "env.toml"
    path.write_text(f'[c]\nexecutor = "slurm"\naccount = "a"\nsbatch_options = {{ "{option}" = "4" }}\n')
    with pytest.raises(envmod.EnvFileError, match=f"set the profile key '{key}' instead") as info:
        envmod.load_env_profile("c", path)
    assert info.value.line == 4


def test_sbatch_options_for_unmanaged_flags_are_fine(tmp_path):
    path = tmp_path / "env.toml"
    path.write_text('[c]\nexecutor = "slurm"\naccount = "a"\nsbatch_options = { reservation = "r", "gpu-bind" = "none" }\n')
    assert envmod.load_env_profile("c", path).values["sbatch_options"]["reservation"] == "r"


def test_misspelt_special_section_suggests_the_section(tmp_path):
    path = tmp_path / "env.toml"
    path.write_text('[wandbb]\nentity = "team"\n')
    with pytest.raises(envmod.EnvFileError, match=r"did you mean the \[wandb\] section\?"):
        envmod.load_env_profile("wandbb", path)
