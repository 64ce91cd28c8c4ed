"""Splitting a job's env_vars into secrets and public values (execution/env_vars.py): a credential-shaped value is a secret under any name; look-alikes are not; public_env_vars wins."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from nemo_runspec.errors import ConfigError
from nemo_runspec.execution.env_vars import split_env_vars
from nemo_runspec.secrets import (
    REDACTED,
    find_secret_values,
    looks_like_credential,
    redact,
    redact_text,
)
from tests.nemo_runspec.test_secret_shapes import INNOCENT, INNOCENT_NAMES, SECRETS


@settings(max_examples=300, deadline=None)
@given(value=SECRETS, name=INNOCENT_NAMES, prefix=st.sampled_from(["", "see ", "url="]))
def test_a_shaped_secret_is_one_under_any_name(value: str, name: str, prefix: str) -> None:
    text = prefix + value
    assert looks_like_credential(text)
    plain, secrets = split_env_vars({}, {"env_vars": {name: text, "GREETING": "hi"}}, environ={}, registry=None)
    assert secrets == {name: text} and plain.get("GREETING") == "hi" and name not in plain
    assert text in find_secret_values({"env_vars": {name: text}})
    assert redact({"a": {name: text}}) == {"a": {name: REDACTED}}
    hidden = ":" + value.split(":", 2)[2].rsplit("@", 1)[0] + "@" if "://" in value else value
    assert hidden not in redact_text(f"something {text} happened")
    assert hidden not in str(ConfigError(f"bad value {text!r}", hint=f"not {text}"))


@settings(max_examples=300, deadline=None)
@given(value=INNOCENT)
def test_look_alikes_are_not_secrets(value: str) -> None:
    assert not looks_like_credential(value)
    assert redact_text(value) == value
    plain, secrets = split_env_vars({}, {"env_vars": {"NOTE": value}}, environ={}, registry=None)
    assert plain["NOTE"] == value and secrets == {}


def test_public_env_vars_wins_over_the_shape() -> None:
    token = "hf_" + "a" * 30
    plain, secrets = split_env_vars({}, {"env_vars": {"NOTE": token}, "public_env_vars": ["NOTE"]}, environ={},
                                    registry=None)
    assert plain["NOTE"] == token and secrets == {}
