"""Tests for nemo_runspec.env: discovery, loading, extends, validation, sections."""

from __future__ import annotations

import subprocess
import textwrap
from pathlib import Path

import pytest

from import_probes import imported_after
from nemo_runspec import env as envmod
from nemo_runspec.cli_context import GlobalContext
from nemo_runspec.env import (
    EnvFile,
    find_env_file,
    get_artifacts_config,
    get_cache_config,
    get_cli_config,
    get_wandb_config,
    load_env_file,
    load_env_profile,
    parse_env,
)
from nemo_runspec.errors import EnvFileError
from nemo_runspec.secrets import REDACTED

REPO = Path(__file__).resolve().parents[1]


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip("\n"))
    return path


def line_no(path: Path, needle: str, nth: int = 1) -> int:
    """1-based line of the nth line of ``path`` containing ``needle``."""
    seen = 0
    for i, line in enumerate(path.read_text().splitlines(), 1):
        if needle in line:
            seen += 1
            if seen == nth:
                return i
    raise AssertionError(f"{needle!r} not in {path}")


@pytest.fixture(autouse=True)
def _no_env_var(monkeypatch):
    monkeypatch.delenv("NEMOTRON_ENV_FILE", raising=False)


SIMPLE = """
[base]
executor = "slurm"
account = "acct"
partition = "batch"
time = "04:00:00"
mounts = ["/lustre:/lustre", "/data:/data:ro"]
env_vars = { NCCL_DEBUG = "INFO", HF_HOME = "/cache/hf" }

[dev]
extends = "base"
run_partition = "interactive"
nodes = 2
"""


# --------------------------------------------------------------------------- discovery


def make_project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    return root


def test_find_walks_up_to_project_root(tmp_path):
    root = make_project(tmp_path)
    env = write(root / "env.toml", SIMPLE)
    deep = root / "a" / "b"
    deep.mkdir(parents=True)
    assert find_env_file(start=deep) == env


def test_find_prefers_nearest(tmp_path):
    root = make_project(tmp_path)
    write(root / "env.toml", SIMPLE)
    nearer = write(root / "a" / "env.toml", SIMPLE)
    (root / "a" / "b").mkdir()
    assert find_env_file(start=root / "a" / "b") == nearer


def test_find_never_goes_beyond_project_root(tmp_path):
    write(tmp_path / "env.toml", SIMPLE)  # above the project: must be ignored
    root = make_project(tmp_path)
    (root / "sub").mkdir()
    assert find_env_file(start=root / "sub") is None


def test_pyproject_marks_root_too(tmp_path):
    write(tmp_path / "env.toml", SIMPLE)
    root = tmp_path / "p"
    write(root / "pyproject.toml", "[project]\nname='x'\n")
    (root / "src").mkdir()
    assert find_env_file(start=root / "src") is None
    env = write(root / "env.toml", SIMPLE)
    assert find_env_file(start=root / "src") == env


def test_outside_any_project_only_start_dir(tmp_path):
    write(tmp_path / "env.toml", SIMPLE)
    (tmp_path / "x").mkdir()
    # tmp dirs have no .git/pyproject above them, so only x itself is searched
    assert find_env_file(start=tmp_path / "x") is None
    assert find_env_file(start=tmp_path) == tmp_path / "env.toml"


def test_explicit_beats_env_var_beats_walk(tmp_path, monkeypatch):
    root = make_project(tmp_path)
    walked = write(root / "env.toml", SIMPLE)
    from_var = write(tmp_path / "var.toml", SIMPLE)
    explicit = write(tmp_path / "explicit.toml", SIMPLE)
    assert find_env_file(start=root) == walked
    monkeypatch.setenv("NEMOTRON_ENV_FILE", str(from_var))
    assert find_env_file(start=root) == from_var
    assert find_env_file(explicit, start=root) == explicit


def test_explicit_missing_is_error(tmp_path, monkeypatch):
    missing = tmp_path / "nope.toml"
    with pytest.raises(EnvFileError) as e:
        find_env_file(missing)
    assert str(missing) in str(e.value) and "--env-file" in str(e.value)
    monkeypatch.setenv("NEMOTRON_ENV_FILE", str(missing))
    with pytest.raises(EnvFileError) as e:
        find_env_file()
    assert str(missing) in str(e.value) and "NEMOTRON_ENV_FILE" in str(e.value)


def test_parse_env_local_mode_needs_no_file(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert parse_env(GlobalContext()) is None


def test_parse_env_missing_file_says_where_and_how(tmp_path, monkeypatch):
    root = make_project(tmp_path)
    sub = root / "sub"
    sub.mkdir()
    monkeypatch.chdir(sub)
    with pytest.raises(EnvFileError) as e:
        parse_env(GlobalContext(run="dev"))
    msg = str(e.value)
    assert str(sub / "env.toml") in msg and str(root / "env.toml") in msg
    assert str(tmp_path / "env.toml") not in msg  # never beyond the root
    assert "cp env.toml.example env.toml" in msg
    assert "--env-file" in msg and "NEMOTRON_ENV_FILE" in msg
    assert "'dev'" in msg


def test_parse_env_uses_ctx_env_file_and_batch(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    path = write(tmp_path / "elsewhere" / "my.toml", SIMPLE)
    prof = parse_env(GlobalContext(batch="dev", env_file=str(path)))
    assert prof is not None and prof.name == "dev" and prof.path == path
    assert prof.partition_for("batch") == "batch"
    assert prof.partition_for("run") == "interactive"


# --------------------------------------------------------------------------- loading


def test_load_env_file_profiles_sections_lines(tmp_path):
    path = write(
        tmp_path / "env.toml",
        SIMPLE
        + """
[wandb]
project = "p"

[cache]
dir = "/tmp/c"
""",
    )
    ef = load_env_file(path)
    assert set(ef.profiles) == {"base", "dev"}
    assert ef.sections["wandb"] == {"project": "p"}
    assert ef.sections["artifacts"] == {} and ef.sections["cli"] == {}
    assert ef.line_of("dev", "nodes") == line_no(path, "nodes = 2")
    assert ef.line_of("base", "env_vars", "HF_HOME") == line_no(path, "HF_HOME")
    assert ef.line_of("dev") == line_no(path, "[dev]")


def test_line_map_survives_multiline_values(tmp_path):
    path = write(
        tmp_path / "env.toml",
        '''
[a]
startup_commands = [
  "echo [not.a.table]",
  "x = 1",
]
description = """
fake = "key"
[fake]
"""
account = 'x'   # comment [z]
"quoted.key" = 1

[a.env_vars]
K = "v"
''',
    )
    ef = load_env_file(path)
    assert ef.line_of("a", "account") == line_no(path, "account = 'x'")
    assert ef.line_of("a", "startup_commands") == line_no(path, "startup_commands")
    assert ("a", "fake") not in ef.lines and ("fake",) not in ef.lines
    assert ef.line_of("a", "quoted.key") == line_no(path, '"quoted.key"')
    assert ef.line_of("a", "env_vars", "K") == line_no(path, 'K = "v"')


def test_toml_syntax_error_has_path_and_line(tmp_path):
    path = write(tmp_path / "env.toml", '[a]\nexecutor = "slurm"\nnodes = = 2\n')
    with pytest.raises(EnvFileError) as e:
        load_env_file(path)
    assert str(e.value).startswith(f"{path}:3: invalid TOML")


def test_top_level_key_outside_table(tmp_path):
    path = write(tmp_path / "env.toml", 'executor = "slurm"\n[a]\n')
    with pytest.raises(EnvFileError) as e:
        load_env_file(path)
    assert str(e.value).startswith(f"{path}:1:") and "'executor'" in str(e.value)


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


# --------------------------------------------------------------------------- validation


@pytest.mark.parametrize(
    ("body", "needle", "must_contain"),
    [
        ("nodez = 2", "nodez", ["unknown key 'nodez'", "did you mean 'nodes'"]),
        ('setup = "pip install x"', "setup", ["unknown key 'setup'", "startup_commands"]),
        ('nodes = "4"', "nodes", ["'nodes'", "integer", "string '4'"]),
        ('exclusive = "yes"', "exclusive", ["'exclusive'", "boolean", "'yes'"]),
        ('executor = "slrum"', "executor", ["'executor'", "'slurm'", "'slrum'"]),
        ('time = "4h"', "time", ["'time'", "Slurm time", "'4h'"]),
        ('time = "1-25"', "time", ["'time'", "Slurm time"]),
        ('mounts = ["/only-src"]', "mounts", ["'mounts'", "src:dst"]),
        ("mounts = 3", "mounts", ["'mounts'", "array of strings"]),
        ("retries = -1", "retries", ["'retries'", "-1"]),
        ("port = 70000", "port", ["'port'", "70000"]),
        ('packager = "zip"', "packager", ["'packager'", "'zip'", "'git'"]),
        ("env_vars = { OMP_NUM_THREADS = 1 }", "OMP", ["'env_vars.OMP_NUM_THREADS'", "string", 'quote it: "1"']),
        ('startup_commands = "echo hi"', "startup", ["'startup_commands'", "array of strings"]),
        ("sbatch_options = { reservation = [1] }", "sbatch", ["'sbatch_options.reservation'"]),
        ('tunnel = "ssh"', "tunnel", ['tunnel = "ssh" requires host']),
        ('packager = "hybrid"', "packager", ["hybrid", "packagers"]),
        ('packager = "pattern"', "packager", ["packager_include_pattern"]),
        ("nproc_per_node = 4\ngpus_per_node = 8", "nproc", ["nproc_per_node", "gpus_per_node", "agree"]),
        ('dependency_type = "afterwards"', "dependency", ["'dependency_type'", "'afterok'"]),
    ],
)
def test_profile_key_errors(tmp_path, body, needle, must_contain):
    path = write(tmp_path / "env.toml", f'[p]\ndescription = "x"\n{body}\n')
    with pytest.raises(EnvFileError) as e:
        load_env_profile("p", path)
    msg = str(e.value)
    assert msg.startswith(f"{path}:{line_no(path, needle)}:"), msg
    for part in must_contain:
        assert part in msg, (part, msg)
    assert "\n" not in msg and "pydantic" not in msg and "errors.pydantic.dev" not in msg


def test_slurm_requires_account_says_so(tmp_path):
    path = write(tmp_path / "env.toml", '[s]\nexecutor = "slurm"\npartition = "p"\n')
    with pytest.raises(EnvFileError) as e:
        load_env_profile("s", path)
    msg = str(e.value)
    assert msg.startswith(f"{path}:2:") and "account" in msg and "slurm" in msg


def test_account_may_come_from_child_or_parent(tmp_path):
    path = write(
        tmp_path / "env.toml",
        '[base]\nexecutor = "slurm"\n[a]\nextends = "base"\naccount = "x"\n'
        '[b]\naccount = "y"\n[c]\nextends = "b"\nexecutor = "slurm"\n',
    )
    assert load_env_profile("a", path).values["account"] == "x"
    assert load_env_profile("c", path).values["account"] == "y"


def test_error_in_parent_points_to_parent_line(tmp_path):
    path = write(tmp_path / "env.toml", '[base]\nnodes = "two"\n[dev]\nextends = "base"\n')
    with pytest.raises(EnvFileError) as e:
        load_env_profile("dev", path)
    assert str(e.value).startswith(f"{path}:2:") and "[base]" in str(e.value)


def test_secret_value_not_shown_in_type_error(tmp_path):
    path = write(tmp_path / "env.toml", "[p]\nenv_vars = { HF_TOKEN = 123456789 }\n")
    with pytest.raises(EnvFileError) as e:
        load_env_profile("p", path)
    assert "HF_TOKEN" in str(e.value) and "123456789" not in str(e.value)


def test_valid_full_profile_all_keys(tmp_path):
    path = write(
        tmp_path / "env.toml",
        """
        [full]
        executor = "slurm"
        description = "everything"
        account = "a"
        partition = "p"
        run_partition = "rp"
        batch_partition = "bp"
        nodes = 2
        ntasks_per_node = 1
        nproc_per_node = 4
        cpus_per_task = 16
        mem = "0"
        time = "1-00:30:00"
        exclusive = true
        qos = "high"
        constraint = "a100"
        exclude = "node1"
        gres = "gpu:4"
        container_image = "nvcr.io/nvidia/pytorch:25.01-py3"
        mounts = ["/a:/a"]
        env_vars = { X = "1" }
        startup_commands = ["echo $HOME"]
        retries = 2
        job_name_prefix = "me-"
        srun_args = ["--mpi=pmix"]
        sbatch_options = { reservation = "r", "gpu-bind" = "none", requeue = true, nice = 5 }
        packager = "hybrid"
        check_uncommitted = false
        tunnel = "ssh"
        host = "login"
        user = "me"
        port = 2222
        identity = "~/.ssh/id_ed25519"
        remote_job_dir = "/lustre/jobs"
        job_dir = "/tmp/jobs"
        workdir = "/opt/project"
        dependency_type = "afterany"
        ray_port_base = 20000
        ray_timeout = 600
        local_nproc = 2
        packager_include_pattern = ["src/**/*.py"]
        packager_relative_path = "."
        packager_subpath = "src"

        [full.packagers.code]
        packager = "git"
        subpath = "src"

        [full.packagers.configs]
        packager = "pattern"
        include_pattern = "configs/*.yaml"
        """,
    )
    prof = load_env_profile("full", path)
    assert prof.values["gpus_per_node"] == 4 and "nproc_per_node" not in prof.values  # alias folded
    assert prof.values["packagers"]["configs"]["include_pattern"] == "configs/*.yaml"
    assert prof.get("check_uncommitted") is False
    keys = set(envmod.PROFILE_KEYS)
    assert set(prof.values) == keys - {"extends", "nproc_per_node"}  # every other key is set


def test_defaults_separate_from_values(tmp_path):
    path = write(tmp_path / "env.toml", '[l]\ndescription = "local"\n')
    prof = load_env_profile("l", path)
    assert "executor" not in prof.values
    assert prof.get("executor") == "local" and prof.executor == "local"
    assert prof.get("check_uncommitted") is True
    assert prof.get("dependency_type") == "afterok"
    assert prof.get("executor", "mine") == "mine"
    assert prof.get("no_such_key") is None


# --------------------------------------------------------------------------- interpolation


def test_oc_env_resolves_and_defaults(tmp_path, monkeypatch):
    monkeypatch.setenv("MY_ACCT", "team-a")
    monkeypatch.delenv("NOT_SET_X", raising=False)
    path = write(
        tmp_path / "env.toml",
        """
        [p]
        account = "${oc.env:MY_ACCT}"
        job_dir = "/x/${oc.env:NOT_SET_X,fallback}/y"
        remote_job_dir = "${oc.env:NOT_SET_X,'quoted'}"
        description = "\\\\${oc.env:MY_ACCT} stays"
        env_vars = { A = "pre-${oc.env:MY_ACCT}" }
        """,
    )
    prof = load_env_profile("p", path)
    assert prof.values["account"] == "team-a"
    assert prof.values["job_dir"] == "/x/fallback/y"
    assert prof.values["remote_job_dir"] == "quoted"
    assert prof.values["description"] == "${oc.env:MY_ACCT} stays"
    assert prof.values["env_vars"]["A"] == "pre-team-a"


def test_oc_env_missing_names_file_line_key(tmp_path, monkeypatch):
    monkeypatch.delenv("NOT_SET_Y", raising=False)
    path = write(tmp_path / "env.toml", '[p]\ndescription = "d"\naccount = "${oc.env:NOT_SET_Y}"\n')
    with pytest.raises(EnvFileError) as e:
        load_env_profile("p", path)
    msg = str(e.value)
    assert msg.startswith(f"{path}:3:") and "NOT_SET_Y" in msg and "'account'" in msg


def test_shell_syntax_left_untouched(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", "/should/not/appear")
    text = [
        "echo $HOME",
        "cd ${HOME}/x",
        "export H=$(hostname)",
        "echo ${SLURM_JOB_ID:-none}",
    ]
    path = write(
        tmp_path / "env.toml",
        "[p]\nstartup_commands = [\n"
        + "".join(f"  {s!r},\n".replace("'", '"') for s in text)
        + ']\nenv_vars = { D = "${HOME}/d", E = "$USER" }\n',
    )
    prof = load_env_profile("p", path)
    assert prof.values["startup_commands"] == text
    assert prof.values["env_vars"] == {"D": "${HOME}/d", "E": "$USER"}


def test_unused_profile_interpolation_not_resolved(tmp_path, monkeypatch):
    monkeypatch.delenv("NOT_SET_Z", raising=False)
    path = write(tmp_path / "env.toml", '[a]\naccount = "${oc.env:NOT_SET_Z}"\n[b]\nnodes = 1\n')
    assert load_env_profile("b", path).values == {"nodes": 1}


# --------------------------------------------------------------------------- secrets / to_dict


def test_redaction_of_secret_env_vars(tmp_path, monkeypatch):
    monkeypatch.setenv("SOME_TOKEN_SRC", "hf_abcdefghijklmnopqrstuvwxyz123")
    path = write(
        tmp_path / "env.toml",
        '[p]\nenv_vars = { HF_TOKEN = "${oc.env:SOME_TOKEN_SRC}", PLAIN = "ok" }\n'
        'startup_commands = ["echo using ${oc.env:SOME_TOKEN_SRC}"]\n',
    )
    prof = load_env_profile("p", path)
    secret = "hf_abcdefghijklmnopqrstuvwxyz123"
    assert prof.values["env_vars"]["HF_TOKEN"] == secret  # real value for execution
    shown = prof.to_dict(redacted=True)
    assert secret not in repr(shown)
    assert shown["values"]["env_vars"]["HF_TOKEN"] == REDACTED
    assert shown["values"]["env_vars"]["PLAIN"] == "ok"
    assert shown["chain"] == ["p"] and shown["sources"]["env_vars.PLAIN"].endswith("[p]")
    assert secret in repr(prof.to_dict())


# --------------------------------------------------------------------------- special sections


SECTIONS = """
[wandb]
entity = "team"
project = "${oc.env:WB_PROJECT,nemotron}"
tags = ["a"]

[artifacts]
backend = "fsspec"
root = "s3://bucket/art"

[cache]
git_dir = "/c/git"

[cli]
default_profile = "dev"

[dev]
nodes = 1
"""


def test_sections_validated_and_defaults(tmp_path, monkeypatch):
    monkeypatch.delenv("WB_PROJECT", raising=False)
    path = write(tmp_path / "env.toml", SECTIONS)
    assert get_wandb_config(path) == {
        "entity": "team",
        "project": "nemotron",
        "tags": ["a"],
        "api_key_env": "WANDB_API_KEY",
    }
    assert get_artifacts_config(path) == {"backend": "fsspec", "root": "s3://bucket/art"}
    assert get_cache_config(path) == {"git_dir": "/c/git"}
    assert get_cli_config(load_env_file(path)) == {"default_profile": "dev"}


def test_sections_absent_or_no_file(tmp_path, monkeypatch):
    path = write(tmp_path / "env.toml", "[dev]\nnodes = 1\n")
    assert get_wandb_config(path) == {} and get_cache_config(path) == {}
    monkeypatch.chdir(tmp_path / "..")
    empty = tmp_path / "empty"
    empty.mkdir()
    monkeypatch.chdir(empty)
    assert get_artifacts_config() == {}


@pytest.mark.parametrize(
    ("text", "needle", "parts"),
    [
        ('[wandb]\nprojet = "p"\n', "projet", ["unknown key 'projet'", "[wandb]", "did you mean 'project'"]),
        ('[wandb]\napi_key = "abc"\n', "api_key", ["unknown key 'api_key'", "api_key_env"]),
        ('[wandb]\nmode = "sometimes"\n', "mode", ["'mode'", "'offline'"]),
        ('[artifacts]\nbackend = "s4"\n', "backend", ["'backend'", "'fsspec'"]),
        ('[cache]\ngitdir = "/x"\n', "gitdir", ["did you mean 'git_dir'"]),
        ('[cli]\ndefault_profile = "dve"\n[dev]\n', "default_profile", ["'dve'", "did you mean 'dev'"]),
    ],
)
def test_section_errors(tmp_path, text, needle, parts):
    path = write(tmp_path / "env.toml", text)
    getter = {
        "[wandb]": get_wandb_config,
        "[artifacts]": get_artifacts_config,
        "[cache]": get_cache_config,
        "[cli]": get_cli_config,
    }[text.split("\n")[0]]
    with pytest.raises(EnvFileError) as e:
        getter(path)
    msg = str(e.value)
    assert msg.startswith(f"{path}:{line_no(path, needle)}:"), msg
    for p in parts:
        assert p in msg, (p, msg)


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
        "packager_relative_path packager_subpath packagers check_uncommitted tunnel host user "
        "port identity remote_job_dir job_dir workdir dependency_type ray_port_base ray_timeout "
        "local_nproc"
    ).split()
    assert set(envmod.PROFILE_KEYS) == set(spec)
    assert "setup" not in envmod.PROFILE_KEYS


def test_hybrid_sub_packagers_accept_code_and_self_contained_with_flags(tmp_path):
    path = write(
        tmp_path / "env.toml",
        """
        [h]
        packager = "hybrid"
        [h.packagers.main]
        packager = "code"
        check_uncommitted = false
        include_submodules = false
        [h.packagers.script]
        packager = "self_contained"
        [h.packagers.lib]
        packager = "git"
        include_submodules = true
        """,
    )
    prof = load_env_profile("h", path)
    subs = prof.values["packagers"]
    assert subs["main"]["packager"] == "code"
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


def test_ray_profile_keys_reach_template_env(tmp_path):
    from nemo_runspec.execution.ray import ray_env_vars

    path = write(tmp_path / "env.toml", "[r]\nray_port_base = 21000\nray_timeout = 42\n")
    prof = load_env_profile("r", path)
    env = ray_env_vars(python=None, port_base=prof.get("ray_port_base"), timeout=prof.get("ray_timeout"))
    assert env == {"NEMOTRON_RAY_PORT_BASE": "21000", "NEMOTRON_RAY_TIMEOUT": "42"}


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
