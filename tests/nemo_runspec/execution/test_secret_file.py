"""Secrets file: 0600, sourced with tracing off, deleted, value never traced."""

from __future__ import annotations

import os
import stat
import subprocess

import pytest

from nemo_runspec.execution.secret_file import render_secret_file, source_snippet, write_secret_file

# $$ is a literal $ (the one rule for $: nemo_runspec.dollar), as in every env var value
VALUE = "hf_Zq9secretVALUE with 'quotes' and $$dollar"
SEEN = "hf_Zq9secretVALUE with 'quotes' and $dollar"


def test_file_is_0600_and_roundtrips(tmp_path):
    path = write_secret_file(tmp_path / "d" / "s.env", {"HF_TOKEN": VALUE, "X_KEY": "k"})
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    out = subprocess.run(["bash", "-c", f'set -a; . {path}; printf "%s|%s" "$HF_TOKEN" "$X_KEY"'],
                         capture_output=True, text=True, check=True).stdout
    assert out == f"{SEEN}|k"


def test_rewrite_keeps_0600_even_with_open_umask(tmp_path):
    old = os.umask(0)
    try:
        path = tmp_path / "s.env"
        path.write_text("old")
        os.chmod(path, 0o666)
        write_secret_file(path, {"A_TOKEN": "v"})
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600


def test_snippet_under_set_evx_hides_value_exports_and_deletes(tmp_path):
    path = write_secret_file(tmp_path / "s.env", {"HF_TOKEN": VALUE})
    script = tmp_path / "job.sh"
    script.write_text(
        "#!/bin/bash\nset -evx\nexport PLAIN=1\n"
        + source_snippet(str(path))
        + "\nbash -c 'printf %s \"$HF_TOKEN\"' > " + str(tmp_path / "seen") + "\necho after\n"
    )
    proc = subprocess.run(["bash", str(script)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "seen").read_text() == SEEN          # child processes see it
    assert not path.exists()                                  # deleted after sourcing
    assert "hf_Zq9secretVALUE" not in proc.stdout + proc.stderr
    assert "echo after" in proc.stderr                        # tracing is back on


def test_missing_file_is_reported_not_fatal(tmp_path):
    proc = subprocess.run(["bash", "-c", "set -evx; " + source_snippet(str(tmp_path / "nope"))],
                          capture_output=True, text=True)
    assert proc.returncode == 0 and "is missing" in proc.stderr


def test_bad_names_rejected():
    import pytest

    from nemo_runspec.errors import ExecutionError

    with pytest.raises(ExecutionError):
        render_secret_file({"BAD NAME": "x"})


@pytest.mark.parametrize(
    ("retries", "restart", "code", "kept"),
    [(0, 0, 0, False), (0, 0, 3, False), (1, 0, 3, True), (1, 0, 0, False), (1, 1, 3, False)],
)
def test_file_survives_only_for_a_requeue(tmp_path, retries, restart, code, kept):
    """Deleted at exit, except when nemo-run's template is about to requeue the attempt."""
    path = write_secret_file(tmp_path / "s.env", {"HF_TOKEN": VALUE})
    script = (f"set -evx\nexport TORCHX_MAX_RETRIES={retries}\nexport SLURM_RESTART_COUNT={restart}\n"
              + source_snippet(str(path)) + f"\nset +e\nexit {code}\n")
    proc = subprocess.run(["bash", "-c", script], capture_output=True, text=True)
    assert proc.returncode == code
    assert path.exists() is kept
    assert VALUE not in proc.stdout + proc.stderr
