"""The error line every user-facing problem becomes (errors.py): ``path:line: problem (hint)``,
bounded, one line, credentials masked, picklable; the debug switch; the error OmegaConf wraps."""

from __future__ import annotations

import pickle

import pytest

from nemo_runspec.errors import (
    MAX_HINT,
    MAX_PROBLEM,
    ConfigError,
    NemoRunspecError,
    SubmissionError,
    debug_enabled,
    raised_inside,
    set_debug,
    shorten,
)


def test_the_line_has_its_parts_in_order_and_omits_absent_ones():
    assert str(ConfigError("bad", path="a.yaml", line=3, hint="fix it")) == "a.yaml:3: bad (fix it)"
    assert str(ConfigError("bad", path="a.yaml")) == "a.yaml: bad"
    assert str(ConfigError("bad", line=3)) == "bad"
    assert str(ConfigError("bad", hint="h")) == "bad (h)"


def test_the_line_is_one_line_and_bounded():
    e = ConfigError("first\nsecond", hint="x" * 10 * MAX_HINT)
    assert "\n" not in str(e) and str(e).startswith("first second (")
    long = ConfigError("p" * 10 * MAX_PROBLEM)
    assert len(str(long)) < MAX_PROBLEM + 10
    assert "characters left out" in str(long)


def test_shorten_keeps_the_start_and_the_end():
    assert shorten("short", 100) == "short"
    out = shorten("a" * 500 + "z" * 500, 200)
    assert out.startswith("a" * 106 + " ...") and out.endswith("... " + "z" * 53) and len(out) < 250
    assert "(841 characters left out)" in out


def test_a_credential_in_a_message_is_masked():
    token = "hf_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7"
    assert token not in str(ConfigError(f"bad token {token}", hint=f"not {token}"))


def test_errors_survive_pickling_with_their_parts_and_type():
    e = pickle.loads(pickle.dumps(SubmissionError("rejected", path="p", line=2, key="k", hint="h")))
    assert type(e) is SubmissionError
    assert (e.problem, e.path, e.line, e.key, e.hint) == ("rejected", "p", 2, "k", "h")


def test_debug_comes_from_the_flag_or_the_environment(monkeypatch):
    monkeypatch.delenv("NEMOTRON_DEBUG", raising=False)
    set_debug(False)
    assert not debug_enabled()
    monkeypatch.setenv("NEMOTRON_DEBUG", "yes")
    assert debug_enabled()
    monkeypatch.setenv("NEMOTRON_DEBUG", "0")
    assert not debug_enabled()
    set_debug(True)
    try:
        assert debug_enabled()
    finally:
        set_debug(False)


def test_raised_inside_finds_our_error_under_wrappers():
    ours = ConfigError("the real problem")
    try:
        try:
            raise ours
        except ConfigError as inner:
            raise RuntimeError("wrapped") from inner
    except RuntimeError as outer:
        assert raised_inside(outer) is ours
    assert raised_inside(ValueError("plain")) is None
    loop = ValueError("a")
    loop.__context__ = loop
    assert raised_inside(loop) is None


@pytest.mark.parametrize("cls", [ConfigError, SubmissionError])
def test_every_error_is_a_nemo_runspec_error(cls):
    assert issubclass(cls, NemoRunspecError)
