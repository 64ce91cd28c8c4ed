"""Secret finding, redaction and the secrets file: the behaviour mutation testing found
unstated (docs/dev/mutation.md). Each test names the rule it pins."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

import pytest

from nemo_runspec.errors import ExecutionError
from nemo_runspec.execution.secret_file import (
    render_secret_file,
    upload_secret_file,
    write_secret_file,
)
from nemo_runspec.secrets import (
    REDACTED,
    find_secret_values,
    is_reference,
    is_secret_name,
    redact,
    redact_text,
    searchable,
    secret_arguments,
)

HF = "hf_" + "Q" * 30  # credential-shaped under any name

# ------------------------------------------------------------------ names


@pytest.mark.parametrize("name", ["auth", "AUTH", "pat", "PAT", "pass", "Pass"])
def test_a_bare_weak_word_is_not_a_secret(name: str) -> None:
    """``auth``/``pat``/``pass`` alone are a mode, a pattern or a count."""
    assert is_secret_name(name) is False


@pytest.mark.parametrize("name", ["API_KEY_ID", "SSH_KEY_ID", "AWS_ACCESS_KEY_ID"])
def test_key_id_is_judged_like_key(name: str) -> None:
    assert is_secret_name(name) is True


def test_a_bare_key_id_is_an_identifier() -> None:
    """Two words ``key_id`` (a data field) are not shortened to ``key``."""
    assert is_secret_name("key_id") is False


# ------------------------------------------------------------------ references


@pytest.mark.parametrize("value", ["${a}}", "${}${b}", "${}x}"])
def test_a_brace_inside_makes_it_a_literal(value: str) -> None:
    """Only one whole ``${...}`` with no ``}`` inside is a reference."""
    assert is_reference(value) is False
    assert find_secret_values({"HF_TOKEN": value}) == [value]


# ------------------------------------------------------------------ free text


def test_longer_values_are_replaced_before_their_prefixes() -> None:
    """A secret that contains another is masked whole: no tail of it is left."""
    text = "x abcdefgh y abcd z"
    assert redact_text(text, values=["abcd", "abcdefgh"]) == f"x {REDACTED} y {REDACTED} z"
    assert searchable(["bbbb", "aaaa", "aaaaa"]) == ["aaaaa", "aaaa", "bbbb"]


@pytest.mark.parametrize("val", ["null", "None", "~"])
def test_empty_markers_after_a_secret_name_are_kept(val: str) -> None:
    for text in (f"HF_TOKEN={val}", f"api_key: {val}"):
        assert redact_text(text) == text


def test_allowed_credential_shapes_are_kept_and_others_masked() -> None:
    """``run.not_secret`` values: a token inside one is kept, any other is masked."""
    other = "ghp_" + "z" * 36
    text = f"model {HF} and {other}"
    assert redact_text(text, allow=[f"repo/{HF}/x"]) == f"model {HF} and {REDACTED}"
    assert redact_text(text, allow=["unrelated"]) == f"model {REDACTED} and {REDACTED}"


def test_allow_reaches_every_depth_of_redact() -> None:
    obj = {"a": {"b": [f"use {HF}", (HF,)]}, "c": HF}
    assert redact(obj, allow=[HF]) == obj
    assert redact(obj) == {"a": {"b": [f"use {REDACTED}", (REDACTED,)]}, "c": REDACTED}


def test_extra_values_reach_every_depth_of_redact() -> None:
    obj = {"a": [{"cmd": "run s3cr3t-v4lue"}], "b": ("s3cr3t-v4lue",)}
    assert redact(obj, extra_values=["s3cr3t-v4lue"]) == {
        "a": [{"cmd": f"run {REDACTED}"}], "b": (REDACTED,)}


# ------------------------------------------------------------------ arguments


@pytest.mark.parametrize(("args", "found"), [
    (["--api-key", "k1"], ["k1"]),                           # value is the last argument
    (["--verbose", "--api-key", "k1"], ["k1"]),              # a flag before does not matter
    (["--api-key", "--seed", "3"], []),                      # a flag is not the value
    (["--api-key=k1value"], ["--api-key=k1value"]),          # kebab names like snake
    (["HF_TOKEN=false", "API_KEY=None", "PASSWORD=null", "DB_PASS=NULL"], []),
    (["--pwd=/home/u", "pwd=/x"], []),                       # the working directory
    (["X_PASS=hunter22"], ["X_PASS=hunter22"]),
])
def test_secret_arguments_rules(args: list[str], found: list[str]) -> None:
    assert secret_arguments(args) == found


# ------------------------------------------------------------------ the secrets file


def test_bad_name_error_names_it() -> None:
    with pytest.raises(ExecutionError, match="invalid environment variable name 'BAD NAME'"):
        render_secret_file({"BAD NAME": "x"})


def test_written_file_is_0600_from_creation(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Under an open umask the file is never more than 0600, not even before its chmod."""
    modes: list[int] = []
    real_fdopen = os.fdopen

    def fdopen(fd: int, *a: Any, **kw: Any) -> Any:
        modes.append(stat.S_IMODE(os.fstat(fd).st_mode))
        return real_fdopen(fd, *a, **kw)

    monkeypatch.setattr(os, "fdopen", fdopen)
    old = os.umask(0)
    try:
        path = write_secret_file(tmp_path / "a" / "b" / "c" / "s.env", {"HF_TOKEN": "v"})
    finally:
        os.umask(old)
    assert modes == [0o600]
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert path.read_text() == "HF_TOKEN=v\n"


class _LocalSFTP:
    """paramiko ``SFTPClient``'s open/chmod on the local disk; records the mode of the
    file at every write, so the order chmod-then-write is observable."""

    def __init__(self) -> None:
        self.modes_at_write: list[int] = []

    def open(self, path: str, mode: str = "r") -> _LocalSFTPFile:
        if mode not in ("r", "w", "a"):
            raise OSError(f"bad mode {mode!r}")
        return _LocalSFTPFile(self, path, mode)

    def chmod(self, path: str, mode: int) -> None:
        os.chmod(path, mode)


class _LocalSFTPFile:
    def __init__(self, sftp: _LocalSFTP, path: str, mode: str) -> None:
        self._sftp, self._path = sftp, path
        self._f = open(path, mode + "b")  # noqa: SIM115 - closed in __exit__

    def __enter__(self) -> _LocalSFTPFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self._f.close()

    def chmod(self, mode: int) -> None:
        os.chmod(self._path, mode)

    def write(self, data: bytes) -> None:
        self._sftp.modes_at_write.append(stat.S_IMODE(os.stat(self._path).st_mode))
        self._f.write(data)


def test_uploaded_file_is_0600_before_its_first_byte(tmp_path: Path) -> None:
    sftp = _LocalSFTP()
    remote = tmp_path / "s.env"
    old = os.umask(0)
    try:
        upload_secret_file(sftp, str(remote), {"HF_TOKEN": "it's"})
    finally:
        os.umask(old)
    assert sftp.modes_at_write == [0o600]
    assert stat.S_IMODE(remote.stat().st_mode) == 0o600
    assert remote.read_text() == "HF_TOKEN='it'\"'\"'s'\n"
