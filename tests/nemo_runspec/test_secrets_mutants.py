"""Secret finding, redaction and the secrets file: the behaviour mutation testing found
unstated (docs/dev/mutation.md). Each test names the rule it pins."""

from __future__ import annotations

import os
import re
import stat
import subprocess
from pathlib import Path
from typing import Any

import pytest

from nemo_runspec.errors import ExecutionError
from nemo_runspec.execution import secret_file
from nemo_runspec.execution.secret_file import (
    render_secret_file,
    upload_command,
    upload_secret_file,
    write_secret_file,
)
from nemo_runspec.secrets import (
    REDACTED,
    find_secret_values,
    is_reference,
    is_secret_name,
    marked_names,
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


class _LocalTransport:
    """paramiko ``Transport.open_session()`` whose channel runs the command with the local
    ``sh`` (what sshd does with an exec request): the shell command itself is what the
    tests below exercise, not a copy of it."""

    def __init__(self) -> None:
        self.commands: list[str] = []
        self.channels: list[_LocalChannel] = []

    def open_session(self) -> _LocalChannel:
        self.channels.append(_LocalChannel(self))
        return self.channels[-1]


class _LocalChannel:
    def __init__(self, transport: _LocalTransport) -> None:
        self._transport = transport
        self._proc: subprocess.Popen[bytes] | None = None
        self.closed = False

    def exec_command(self, command: str) -> None:
        self._transport.commands.append(command)
        self._proc = subprocess.Popen(["sh", "-c", command], stdin=subprocess.PIPE,
                                      stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)

    def sendall(self, data: bytes) -> None:
        assert self._proc and self._proc.stdin
        self._proc.stdin.write(data)

    def shutdown_write(self) -> None:
        assert self._proc and self._proc.stdin
        self._proc.stdin.close()

    def makefile_stderr(self, mode: str) -> Any:
        assert self._proc
        if "r" not in mode:  # as paramiko's BufferedFile: reads need a mode with 'r'
            raise OSError("File not open for reading")
        return self._proc.stderr

    def recv_exit_status(self) -> int:
        assert self._proc
        return self._proc.wait(timeout=30)

    def close(self) -> None:
        self.closed = True


def _upload(remote: Path, secrets: dict[str, str]) -> _LocalTransport:
    transport = _LocalTransport()
    old = os.umask(0)  # the shell inherits it: only the command's own umask protects the file
    try:
        upload_secret_file(transport, str(remote), secrets)
    finally:
        os.umask(old)
    return transport


def test_uploaded_file_is_0600_from_creation(tmp_path: Path) -> None:
    """Created by the remote shell under umask 077 and never chmod-ed: its mode at the end
    is the mode it was created with, 0600 although the login's umask is 0."""
    remote = tmp_path / "s.env"
    transport = _upload(remote, {"HF_TOKEN": "it's"})
    assert stat.S_IMODE(remote.stat().st_mode) == 0o600
    assert remote.read_text() == 'HF_TOKEN="it\'s"\n'  # a shell word (nemo_runspec.dollar.shell_word)
    assert "chmod" not in transport.commands[0]


def test_upload_sends_values_on_stdin_never_on_the_command_line(tmp_path: Path) -> None:
    transport = _upload(tmp_path / "s.env", {"HF_TOKEN": HF})
    assert len(transport.commands) == 1 and HF not in transport.commands[0]


def test_upload_replaces_an_old_file_and_its_mode(tmp_path: Path) -> None:
    remote = tmp_path / "s.env"
    remote.write_text("OLD=1\n")
    remote.chmod(0o644)
    _upload(remote, {"HF_TOKEN": "v"})
    assert remote.read_text() == "HF_TOKEN=v\n"
    assert stat.S_IMODE(remote.stat().st_mode) == 0o600


def test_upload_to_an_odd_path_quotes_it(tmp_path: Path) -> None:
    remote = tmp_path / "a dir; echo x" / "s $HOME.env"
    remote.parent.mkdir()
    _upload(remote, {"HF_TOKEN": "v"})
    assert remote.read_text() == "HF_TOKEN=v\n"


def test_failed_upload_is_an_error_naming_the_path_not_the_value(tmp_path: Path) -> None:
    remote = tmp_path / "missing-dir" / "s.env"
    transport = _LocalTransport()
    with pytest.raises(ExecutionError) as err:
        upload_secret_file(transport, str(remote), {"HF_TOKEN": HF})
    msg = str(err.value)
    # the shell's own reason: dash (exit 2) and bash (exit 1) word it differently
    assert re.fullmatch(rf"could not create the secrets file {re.escape(str(remote))} on the SSH host "
                        r"\(exit [12]\): .*(Directory nonexistent|No such file or directory)", msg)
    assert HF not in msg
    assert "\n" not in msg


def test_a_bad_secret_name_fails_before_anything_is_created(tmp_path: Path) -> None:
    transport = _LocalTransport()
    with pytest.raises(ExecutionError, match="invalid environment variable name 'BAD-NAME'"):
        upload_secret_file(transport, str(tmp_path / "s.env"), {"BAD-NAME": "v"})
    assert transport.commands == [] and not (tmp_path / "s.env").exists()


def test_the_channel_is_closed_after_an_upload_and_after_a_failure(tmp_path: Path) -> None:
    transport = _upload(tmp_path / "s.env", {"HF_TOKEN": "v"})
    with pytest.raises(ExecutionError):
        upload_secret_file(transport, str(tmp_path / "missing" / "s.env"), {"HF_TOKEN": "v"})
    assert [c.closed for c in transport.channels] == [True, True]


def test_a_failure_without_a_message_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A remote shell killed or failing silently: the error still has a reason."""
    monkeypatch.setattr(secret_file, "upload_command", lambda path: "exit 5")
    with pytest.raises(ExecutionError) as err:
        upload_secret_file(_LocalTransport(), "/j/s.env", {"HF_TOKEN": "v"})
    assert str(err.value) == "could not create the secrets file /j/s.env on the SSH host (exit 5): no message"


def test_a_message_that_is_not_utf8_is_shown_replaced(tmp_path: Path) -> None:
    """The remote shell's message may hold bytes of another encoding (a path in Latin-1)."""
    missing = tmp_path / "caf\udce9" / "s.env"  # the byte 0xE9 in the file system
    with pytest.raises(ExecutionError) as err:
        upload_secret_file(_LocalTransport(), str(missing), {"HF_TOKEN": "v"})
    assert "caf\ufffd" in str(err.value).split(": ", 1)[1]


def test_upload_command_creates_exclusively_under_umask_077() -> None:
    """The shell's ``>`` is O_EXCL (set -C): a file another user created at that path
    between the ``rm`` and the ``>`` is refused, never written into."""
    assert upload_command("/j/s.env") == "umask 077 && rm -f -- /j/s.env && set -C && cat > /j/s.env"


def test_noclobber_refuses_a_file_that_appears_before_the_write(tmp_path: Path) -> None:
    remote = tmp_path / "s.env"
    command = upload_command(str(remote)).replace(" && rm -f -- ", " && : ")
    remote.write_text("planted\n")
    done = subprocess.run(["sh", "-c", command], input=b"HF_TOKEN=v\n", capture_output=True)
    assert done.returncode != 0 and remote.read_text() == "planted\n"


# ------------------------------------------------------------------ secret_env_vars / public_env_vars
# docs/env-toml.md "Secrets": a profile's secret_env_vars / public_env_vars win over the
# name rule for the env_vars next to them, and only there.

# A value the shape rule cannot see as secret (no password in the URL: a token in a
# query string, a password kept elsewhere): only the marks make it one.
DB_URL = "postgres://db.internal/prod?sslmode=require"


def test_marked_names_reads_both_lists_next_to_env_vars() -> None:
    table = {"secret_env_vars": ["DB_URL", 7], "public_env_vars": ("HF_TOKEN",), "env_vars": {}}
    assert marked_names(table) == (frozenset({"DB_URL", "7"}), frozenset({"HF_TOKEN"}))


@pytest.mark.parametrize("table", [None, "secret_env_vars", ["DB_URL"], {"secret_env_vars": "DB_URL"},
                                   {"public_env_vars": {"HF_TOKEN": True}}, {}])
def test_marked_names_of_anything_else_is_nothing(table: Any) -> None:
    assert marked_names(table) == (frozenset(), frozenset())


def test_a_name_marked_secret_is_a_secret_in_the_env_vars_next_to_it() -> None:
    profile = {"secret_env_vars": ["DB_URL"], "env_vars": {"DB_URL": DB_URL, "OTHER_URL": "x://y"}}
    assert find_secret_values(profile) == [DB_URL]
    assert redact(profile)["env_vars"] == {"DB_URL": REDACTED, "OTHER_URL": "x://y"}


def test_a_name_marked_public_is_not_a_secret_in_the_env_vars_next_to_it() -> None:
    profile = {"public_env_vars": ["HF_TOKEN"], "env_vars": {"HF_TOKEN": "shown-on-purpose", "API_KEY": "k1"}}
    assert find_secret_values(profile) == ["k1"]
    assert redact(profile)["env_vars"] == {"HF_TOKEN": "shown-on-purpose", "API_KEY": REDACTED}


def test_marks_apply_to_env_vars_only_and_only_next_to_them() -> None:
    """Not to the marking table's own keys, another sub-table, nor a deeper env_vars."""
    profile = {"secret_env_vars": ["DB_URL"], "public_env_vars": ["HF_TOKEN"],
               "DB_URL": DB_URL, "HF_TOKEN": "hf-value-1",
               "other": {"DB_URL": DB_URL + "2", "HF_TOKEN": "hf-value-2"},
               "sub": {"env_vars": {"DB_URL": DB_URL + "3", "HF_TOKEN": "hf-value-3"}}}
    assert find_secret_values(profile) == ["hf-value-1", "hf-value-2", "hf-value-3"]
    shown = redact(profile)
    assert (shown["DB_URL"], shown["HF_TOKEN"]) == (DB_URL, REDACTED)
    assert shown["other"] == {"DB_URL": DB_URL + "2", "HF_TOKEN": REDACTED}
    assert shown["sub"]["env_vars"] == {"DB_URL": DB_URL + "3", "HF_TOKEN": REDACTED}


def test_marks_reach_env_vars_inside_a_list_of_profiles() -> None:
    profiles = [{"secret_env_vars": ["DB_URL"], "env_vars": {"DB_URL": DB_URL}}]
    assert find_secret_values(profiles) == [DB_URL]
    assert redact(profiles) == [{"secret_env_vars": ["DB_URL"], "env_vars": {"DB_URL": REDACTED}}]


# ------------------------------------------------------------------ a list of strings is a command line
# find_secret_values reads run.cli.passthrough (and any list of strings) like argv, so the
# dry-run header, the job config and a saved job.yaml mask what secret_arguments finds.


@pytest.mark.parametrize(("args", "values"), [
    (["train.lr=1", "HF_TOKEN=abc123"], ["abc123"]),          # NAME=value: the value only
    (("--api-key", "k1value", "--seed", "3"), ["k1value"]),  # --name value: the value (tuples too)
    (["--api-key=k1value"], ["k1value"]),
    (["API_KEY=abc123=="], ["abc123=="]),                    # '=' inside the value is kept
    (["--api-key", "abc123=="], ["abc123=="]),               # ... and after a bare flag: the whole item
    (["--password", "p=ss-word"], ["p=ss-word"]),
])
def test_a_list_of_strings_is_read_as_a_command_line(args: Any, values: list[str]) -> None:
    assert find_secret_values({"passthrough": args}) == values
    shown = redact_text(" ".join(args), find_secret_values(args))
    assert all(v not in shown for v in values), shown


def test_a_list_holding_other_than_strings_is_data_not_a_command_line() -> None:
    """``["--token", 1]`` is not argv: reading it as one would make "1" a secret and mask
    every 1 of the output."""
    assert find_secret_values({"steps": ["--token", 1234567]}) == []
    assert find_secret_values({"steps": ["--token", None, "x"]}) == []


def test_a_credential_shaped_list_item_is_left_to_the_pattern_mask() -> None:
    """A whole startup command holding a token is not made a secret value (the pattern
    masks the token inside it, the rest of the command stays readable)."""
    cmd = f"huggingface-cli login --token {HF}"
    assert find_secret_values({"setup": [cmd, "python train.py"]}) == []
    assert find_secret_values({"args": ["--api-key", "k1value", f"--hf={HF}"]}) == ["k1value"]
    assert redact_text(cmd, find_secret_values([cmd])) == f"huggingface-cli login --token {REDACTED}"
