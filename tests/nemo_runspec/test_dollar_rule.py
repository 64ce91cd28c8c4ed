"""Issue 30, class 3 (and issue 27 item 4): the one rule for ``$`` (nemo_runspec.dollar).

Property tests over ``$`` forms: what a job sees of an ``env_vars`` value is the
same through bash (Slurm's export lines, the secrets file, the job script of the
other executors), through nemo-run's macro substitution, and in a local run
(no shell); refused forms are one line with the fix; OmegaConf's forms are
resolved here; values stored in a job config survive OmegaConf as text.
"""

from __future__ import annotations

import os
import string
import subprocess
import textwrap
from pathlib import Path
from string import Template

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from omegaconf import OmegaConf

from nemo_runspec import dollar, parse_text
from nemo_runspec.env import load_env_profile
from nemo_runspec.errors import EnvFileError, RunspecError
from nemo_runspec.execution.executor import _template_safe, shell_value
from nemo_runspec.execution.secret_file import render_secret_file

NAMES = ["HOME_X", "SET_A", "EMPTY_B", "UNSET_C"]
ENVIRON = {"HOME_X": "/h x", "SET_A": "a$b\"c'd\\e", "EMPTY_B": "", "PATH": os.environ["PATH"]}
LITERAL = st.text(alphabet=string.ascii_letters + string.digits + " \"'\\`;|&()<>*?[]{}#~!,.:/=@%+-\té→\n",
                  min_size=1, max_size=8).filter(lambda t: "$" not in t)
WORD = st.text(alphabet=string.ascii_letters + string.digits + " ./-_'", max_size=6)
PIECES = st.one_of(
    LITERAL,
    st.just("$$"),
    st.sampled_from(NAMES).map(lambda n: f"${n}"),
    st.sampled_from(NAMES).map(lambda n: f"${{{n}}}"),
    st.tuples(st.sampled_from(NAMES), st.sampled_from([":-", "-"]), WORD).map(lambda t: f"${{{t[0]}{t[1]}{t[2]}}}"),
)
VALUES = st.lists(PIECES, min_size=1, max_size=6).map("".join).filter(
    lambda v: dollar.env_value_problem(v) is None)


def _bash(line: str) -> str:
    proc = subprocess.run(["bash", "-c", line + '\nprintf %s "$V"'], capture_output=True, env=ENVIRON, timeout=10)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.decode()


@settings(max_examples=200, deadline=None)
@given(value=VALUES)
def test_every_backend_gives_the_job_the_same_value(value: str) -> None:
    local = dollar.expand(value, ENVIRON)
    assert _bash(f"export V={shell_value(value)}") == local  # Slurm's export line, the job script
    sourced = render_secret_file({"V": value})                  # the 0600 secrets file, sourced
    assert _bash(f"set -a\n{sourced}set +a") == local
    macros = {"head_node_ip_var": "HEAD", "nproc_per_node_var": "N", "num_nodes_var": "NN",
              "node_rank_var": "R", "het_group_host_var": "H"}
    assert Template(_template_safe(shell_value(value))).safe_substitute(macros) == shell_value(value)


@pytest.mark.parametrize(("value", "seen"), [
    ("${HOME_X}/x", "/h x/x"), ("x$$y", "x$y"), ("$$", "$"), ("$SET_A", ENVIRON["SET_A"]),
    ("${UNSET_C:-dflt}", "dflt"), ("${EMPTY_B:-dflt}", "dflt"), ("${EMPTY_B-dflt}", ""), ("${UNSET_C}", ""),
    ("a;b`c`$$(d)", "a;b`c`$(d)"), ('q"u\\ote', 'q"u\\ote'),
])
def test_examples(value: str, seen: str) -> None:
    assert dollar.expand(value, ENVIRON) == seen == _bash(f"export V={shell_value(value)}")


@pytest.mark.parametrize("value", ["$(hostname)", "a$1", "$?", "end$", "${#X}", "$ x", "${X:+y}", "${X:-$(id)}",
                                   "${oc.env:X}"])
def test_forms_the_rule_refuses(value: str) -> None:
    assert dollar.env_value_problem(value) is not None


def _profile(tmp_path: Path, body: str) -> Path:
    env = tmp_path / "env.toml"
    env.write_text(textwrap.dedent("""\
        [c]
        executor = "slurm"
        account = "a"
        partition = "p"
    """) + body)
    return env


@pytest.mark.parametrize("value", ["$(hostname)", "price$", "${oc.env:X}x$1"])
def test_a_refused_env_value_is_one_line_with_the_fix(tmp_path: Path, value: str, monkeypatch) -> None:
    monkeypatch.setenv("X", "x")
    env = _profile(tmp_path, f'env_vars = {{ V = "{value}" }}\n')
    with pytest.raises(EnvFileError) as exc:
        load_env_profile("c", env)
    assert (exc.value.line, exc.value.key) == (5, "env_vars.V") and "\n" not in str(exc.value)
    assert str(exc.value).startswith(f"{env}:5: key 'env_vars.V' in [c]: ")
    assert "(write $$ for a literal $, or compute the value in startup_commands)" in str(exc.value)


@pytest.mark.parametrize(("key", "toml"), [
    ("env_vars.V", 'env_vars = { V = "${oc.decode:x}" }'),
    ("startup_commands", 'startup_commands = ["echo ${foo:bar}"]'),
    ("account", 'account = "${oc.select:x,y}"'),
])
def test_other_resolvers_are_refused_everywhere(tmp_path: Path, key: str, toml: str) -> None:
    env = tmp_path / "env.toml"
    env.write_text(f'[c]\nexecutor = "slurm"\npartition = "p"\n{toml}\n')
    with pytest.raises(EnvFileError) as exc:
        load_env_profile("c", env)
    assert exc.value.key == key and exc.value.line == 4
    assert "is not resolved in execution settings (only ${oc.env:VAR} is, on this machine)" in str(exc.value)


@settings(max_examples=100, deadline=None)
@given(secret=st.text(alphabet=string.printable.replace("\x0b", "").replace("\x0c", ""), min_size=1, max_size=12))
def test_an_oc_env_value_is_data(secret: str) -> None:
    """${oc.env:VAR} is resolved here, and what it gives is text: no $ of it expands in the job."""
    from nemo_runspec.env.file import interpolate

    os.environ["I30_DATA"] = secret
    try:
        value = interpolate("<${oc.env:I30_DATA}>", ("env_vars", "V"), lambda _k: ("env.toml", 1))
    finally:
        del os.environ["I30_DATA"]
    assert dollar.env_value_problem(value) is None
    assert dollar.expand(value, ENVIRON) == f"<{secret}>"
    if "\x00" not in secret:
        assert _bash(f"export V={shell_value(value)}") == f"<{secret}>"


@settings(max_examples=150, deadline=None)
@given(value=st.lists(st.one_of(LITERAL, st.sampled_from(["${HOME}", "\\${x}", "${a.b}", "\\\\${y}", "$$", "\\"])),
                      min_size=1, max_size=6).map("".join))
def test_values_kept_in_a_job_config_survive_omegaconf(value: str, tmp_path_factory) -> None:
    stored = OmegaConf.create({"run": {"env": dollar.omegaconf_escape({"env_vars": {"V": value}, "l": [value]})}})
    path = tmp_path_factory.mktemp("j") / "job.yaml"
    OmegaConf.save(stored, path)
    back = OmegaConf.to_container(OmegaConf.load(path), resolve=True)
    assert back["run"]["env"] == {"env_vars": {"V": value}, "l": [value]}


# --------------------------------------------------------------------------- runspec values (issue 27 item 4)

def _spec(image: str, env: str = "") -> str:
    return ('# /// script\n# [tool.runspec]\n# name = "ultra3/sft"\n'
            f'# image = "{image}"\n{env}# ///\nprint(1)\n')


@pytest.mark.parametrize("image", ["/home/${oc.env:USER}/.cache/nemotron/containers/ultra3-sft.sqsh",
                                   "oci-archive:///home/${oc.env:USER}/.cache/nemotron/containers/omni3-sft.tar",
                                   "nvcr.io/${oc.env:ORG,nvidia}/nemo:25.11"])
def test_the_reference_images_parse(image: str) -> None:
    assert parse_text(_spec(image), "s.py").image == image


@pytest.mark.parametrize(("image", "why"), [
    ("/home/$USER/x.sqsh", "because of '$'"),
    ("${oc.decode:x}", "${oc.decode:...} is not resolved"),
    ("/home/${oc.env:USER}/a b.sqsh", "because of ' '"),
])
def test_runspec_images_the_rule_refuses(image: str, why: str) -> None:
    with pytest.raises(RunspecError) as exc:
        parse_text(_spec(image), "s.py")
    assert exc.value.line == 4 and why in str(exc.value)


def test_runspec_image_is_resolved_when_the_job_is_built_and_checked_again(tmp_path: Path, monkeypatch) -> None:
    from nemo_runspec.config import build_job_config
    from nemo_runspec.job.settings import job_env

    script = tmp_path / "s.py"
    script.write_text(_spec("/home/${oc.env:USER}/c/x.sqsh", '# [tool.runspec.env]\n# V = "${oc.env:USER}:$$"\n'))
    from nemo_runspec import parse
    from nemo_runspec.execution.env_vars import runspec_env

    spec = parse(script)
    monkeypatch.setenv("USER", "jane")
    cfg = build_job_config(OmegaConf.create({}), None, spec.name, script, [], runspec=spec)
    assert job_env(cfg)["container_image"] == "/home/jane/c/x.sqsh"
    assert runspec_env(spec) == {"V": "jane:$$"}
    monkeypatch.setenv("USER", "ja ne")  # resolved, then held to what an image may contain
    with pytest.raises(EnvFileError, match="cannot be used in the batch script"):
        build_job_config(OmegaConf.create({}), None, spec.name, script, [], runspec=spec)
    monkeypatch.delenv("USER")
    with pytest.raises(EnvFileError, match="environment variable USER is not set") as exc:
        build_job_config(OmegaConf.create({}), None, spec.name, script, [], runspec=spec)
    assert "s.py" in str(exc.value)
