"""No profile value can run a command: each one is refused at load time with one
line, or reaches the batch script as data (property-tested)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import nemo_run as run  # noqa: E402 - a required dependency: a broken install fails, never skips
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nemo_runspec.env.validation import validate_run_env
from nemo_runspec.errors import EnvFileError
from nemo_runspec.execution.executor import shell_value
from nemo_runspec.slurm import prepare_job, render_sbatch  # noqa: E402
from nemo_runspec.spec.models import Launch, Runspec, RunspecResources, RunspecRun

BASE = {"executor": "slurm", "account": "acct", "partition": "debug", "container_image": ""}

# Values pasted into the srun command line or into paths the script uses: bash
# reads them, so shell syntax must never get through.
SHELL_KEYS = ["job_name_prefix", "container_image", "job_dir", "workdir"]
# Values only on "#SBATCH --opt=VALUE" header lines: sbatch reads them (bash sees a
# comment), so whitespace, quotes and line breaks are what must not get through.
HEADER_KEYS = ["account", "partition", "run_partition", "batch_partition", "qos", "constraint",
               "exclude", "gres", "mem"]
STRING_KEYS = SHELL_KEYS + HEADER_KEYS + ["host", "user"]
LIST_KEYS = ["mounts", "srun_args"]

BREAKS_LINES = ["a b", "a\n#SBATCH --wrap=id", "\t", "a\rb", "'q'", '"q"', "a\\b"]
SHELL_SYNTAX = ["qa;touch X;x-", "x$(id)", "x`id`", "a|b>c", "a&&b", "$HOME", "a/b"]
PATH_KEYS = {"container_image", "job_dir", "workdir"}


def _spec(launch: Launch = "torchrun") -> Runspec:
    return Runspec(name="demo/values", script_path=Path("main.py"), run=RunspecRun(launch=launch),
                   resources=RunspecResources(nodes=1, gpus_per_node=0))


def _render(tmp_path, profile: dict, **kw) -> str:
    job = prepare_job(env=profile, mode="batch", runspec=_spec(), packager=run.Packager(),
                      script="main.py", base_dir=tmp_path / "base", exp_id="demo-values_x", **kw)
    return render_sbatch(job)


def _check(env: dict) -> str | None:
    """None when ``env`` validates, else the one-line error text."""
    try:
        validate_run_env(env, {k: "env.toml:3 [p]" for k in env})
    except EnvFileError as exc:
        text = str(exc)
        assert "\n" not in text.replace("\\n", "")
        return text
    return None


@pytest.mark.parametrize("key", STRING_KEYS + ["sbatch_options"])
@pytest.mark.parametrize("value", BREAKS_LINES)
def test_values_that_break_lines_are_refused_everywhere(key, value):
    if key == "container_image" and not value.strip():
        return  # blank means: no container
    setting = {"comment": value} if key == "sbatch_options" else value
    error = _check(BASE | {key: setting})
    assert error is not None, f"{key}={value!r} accepted"
    assert key in error and "env.toml:3" in error


@pytest.mark.parametrize("key", SHELL_KEYS)
@pytest.mark.parametrize("value", SHELL_SYNTAX)
def test_shell_syntax_is_refused_where_bash_reads_the_value(key, value):
    if value == "a/b" and key in PATH_KEYS:
        assert _check(BASE | {key: value}) is None  # a path is fine there
        return
    assert _check(BASE | {key: value}) is not None, f"{key}={value!r} accepted"


@pytest.mark.parametrize("key", LIST_KEYS)
@pytest.mark.parametrize("value", [v for v in BREAKS_LINES + SHELL_SYNTAX if v != "a/b"])
def test_hostile_list_entries_are_refused(key, value):
    entry = f"/data:{value}" if key == "mounts" else value
    assert _check(BASE | {key: [entry]}) is not None


@pytest.mark.parametrize("value", BREAKS_LINES + SHELL_SYNTAX)
def test_env_var_names_must_be_names(value):
    assert _check(BASE | {"env_vars": {value: "x"}}) is not None


def test_ordinary_values_pass_and_reach_the_script_verbatim(tmp_path):
    profile = BASE | {
        "account": "proj-a.b", "partition": "batch,backfill", "qos": "normal",
        "constraint": "a100&(ib|roce)", "exclude": "n[1-4],gpu07", "gres": "gpu:a100:2",
        "mem": "64G", "job_name_prefix": "team.x-", "srun_args": ["--mpi=pmix", "--cpu-bind=none"],
        "sbatch_options": {"begin": "now+1hour", "mail-user": "me@example.com"},
        "job_dir": "/lustre/me/jobs",
    }
    assert _check(profile) is None
    text = _render(tmp_path, profile)
    headers = [ln for ln in text.splitlines() if ln.startswith("#SBATCH ")]
    for option, value in (("account", "proj-a.b"), ("partition", "batch,backfill"),
                          ("constraint", "a100&(ib|roce)"), ("exclude", "n[1-4],gpu07"),
                          ("begin", "now+1hour"), ("mail-user", "me@example.com")):
        # nemo-run shell-quotes some header values; sbatch reads either form
        assert any(h in (f"#SBATCH --{option}={value}", f"#SBATCH --{option}='{value}'")
                   for h in headers), option
    assert "--mpi=pmix --cpu-bind=none" in text


_names = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,8}", fullmatch=True)
_any_text = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"),
                    max_size=40)


SAFE_EXAMPLE = {"job_name_prefix": "x-", "container_image": "img:1", "job_dir": "/tmp/j",
                "account": "a", "partition": "p", "qos": "q", "constraint": "c", "exclude": "n1",
                "gres": "gpu:1", "mem": "1G"}


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(key=st.sampled_from(sorted(SAFE_EXAMPLE)), value=_any_text)
def test_any_string_is_refused_or_data(tmp_path, key, value):
    """Arbitrary text in a key gives a one-line error, or a script shaped exactly
    like the one an ordinary value gives (no new line, no extra option or command)."""
    if _check(BASE | {key: value}) is not None:
        return
    if key == "container_image" and value.strip().lower() in ("", "none", "null"):
        return  # means: no container
    text = _render(tmp_path, BASE | {key: value})
    reference = _render(tmp_path, BASE | {key: SAFE_EXAMPLE[key]})
    assert len(text.splitlines()) == len(reference.splitlines())
    assert [ln.split("=")[0] for ln in text.splitlines() if ln.startswith("#SBATCH")] == \
        [ln.split("=")[0] for ln in reference.splitlines() if ln.startswith("#SBATCH")]


def _bash_export(value: str) -> str:
    """What bash makes of ``export V=<shell_value(value)>`` (run with no environment)."""
    line = f"export V={shell_value(value)}\nprintf %s \"$V\""
    proc = subprocess.run(["bash", "-c", line], capture_output=True,
                          env={"PATH": os.environ["PATH"]}, timeout=10)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.decode()


@settings(max_examples=150, deadline=None)
@given(value=st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00$"),
                     max_size=40))
def test_env_values_are_data(value):
    assert _bash_export(value) == value


def test_env_values_run_nothing_but_expand_references(tmp_path):
    canary = tmp_path / "ran"
    for value in (f"$(touch {canary})", f"`touch {canary}`", f"x; touch {canary}",
                  f"a\ntouch {canary}", f"${{X:-$(touch {canary})}}"):
        out = _bash_export(value)
        assert not canary.exists(), value
        assert out == value
    proc = subprocess.run(["bash", "-c", f"export V={shell_value('/opt/bin:$PATH:${HOME}')}; printf %s \"$V\""],
                          capture_output=True, text=True, env={"PATH": "/usr/bin", "HOME": "/h"})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "/opt/bin:/usr/bin:/h"


def test_hostile_env_value_in_rendered_script_is_quoted(tmp_path):
    text = _render(tmp_path, BASE, env_vars={"GREETING": "hi $(id); `id`"})
    assert 'export GREETING="hi \\$(id); \\`id\\`"' in text


def test_torchrun_render_is_deterministic(tmp_path):
    """--rdzv-id comes from the job, so the dry run equals what is submitted."""
    first = _render(tmp_path, BASE)
    assert "--rdzv-id" in first
    assert all(_render(tmp_path, BASE) == first for _ in range(3))
    other = prepare_job(env=BASE, mode="batch", runspec=_spec(), packager=run.Packager(),
                        script="main.py", base_dir=tmp_path / "base", exp_id="demo-values_y")
    assert render_sbatch(other) != first  # another job, another rendezvous
