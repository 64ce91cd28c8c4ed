"""run.cmd placeholders (_cmd.fill): an unknown {name} is one line at its line with did-you-mean, shell braces stay shell's, a filled value is one word of data."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from nemo_runspec import parse_text
from nemo_runspec.errors import RunspecError
from nemo_runspec.spec.cmd import fill
from tests.nemo_runspec.execution.test_runspec_cmd import HOSTILE, block


def test_unknown_placeholder_is_one_line_at_its_line_with_did_you_mean(tmp_path):
    text = block("[tool.runspec]", 'name = "t/x"', "", "[tool.runspec.run]", 'cmd = "python {scirpt} --config {config}"')
    with pytest.raises(RunspecError) as ei:
        parse_text(text, path="x.py")
    msg = str(ei.value)
    assert msg.startswith("x.py:6: unknown placeholder {scirpt} in run.cmd")
    assert "did you mean 'script'?" in msg and "valid: args, config, job_dir, script" in msg
    assert "\n" not in msg and ei.value.key == "run.cmd"


def test_shell_braces_and_escaped_braces_are_not_placeholders():
    text = block("[tool.runspec]", 'name = "t/x"', "[tool.runspec.run]",
                 'cmd = "echo ${HOME} {{lit}} {a,b} && python {script} --config {config} {args}"')
    spec = parse_text(text, path="x.py")
    out = fill(spec.run.cmd, script="/s.py", config="/c.yaml", args=["z"])
    assert out == "echo ${HOME} {lit} {a,b} && python /s.py --config /c.yaml z"


@pytest.mark.parametrize("value", HOSTILE)
def test_filled_values_are_one_word_of_data(value):
    cmd = fill("printf '%s\\n' {script} {config} {job_dir} {args}", script=value, config=value,
               job_dir=value, args=[value, value])
    out = subprocess.run(["bash", "-c", cmd], capture_output=True, text=True, cwd="/tmp")
    assert out.returncode == 0, out.stderr
    assert out.stdout == (value + "\n") * 5
    assert not Path("/tmp/PWNED").exists()
