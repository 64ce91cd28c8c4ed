"""Tests for nemo_runspec.secrets: secret names, redaction of objects and text."""

from __future__ import annotations

import pytest

from nemo_runspec.secrets import REDACTED, is_secret_name, redact, redact_text, secret_values

SECRET_NAMES = [
    "api_key", "apikey", "apiKey", "access_key", "secret_key", "private_key", "WANDB_API_KEY",
    "NGC_API_KEY", "HF_TOKEN", "AWS_SECRET_ACCESS_KEY", "AWS_ACCESS_KEY_ID", "OPENAI_API_KEY",
    "GITHUB_TOKEN", "DB_PASSWORD", "MY_PASSWD", "auth_token", "client_secret", "accessToken",
    "token", "password", "ssh-passphrase", "gcp_credentials", "GITLAB_PAT", "db_pwd",
]
NOT_SECRET_NAMES = [
    "prompt_key", "text_key", "answer_key", "label_key", "sort_key", "input_key", "output_key",
    "message_key", "messages_key", "content_key", "role_key", "id_key", "name_key", "field_key",
    "column_key", "cache_key", "group_key", "dict_key", "lookup_key", "primary_key",
    "foreign_key", "partition_key", "hash_key", "join_key", "ssh_key", "public_key",
    "tokenizer", "tokenizer_model", "max_tokens", "num_tokens", "pad_token", "eos_token",
    "key_path", "key_file", "password_file", "api_key_env", "PWD", "OLDPWD", "seq_length",
    "pattern", "author", "", "keys",
]


@pytest.mark.parametrize("name", SECRET_NAMES)
def test_secret_names(name: str) -> None:
    assert is_secret_name(name) is True


@pytest.mark.parametrize("name", NOT_SECRET_NAMES)
def test_not_secret_names(name: str) -> None:
    assert is_secret_name(name) is False


def test_redact_nested_replaces_only_secret_keys() -> None:
    obj = {
        "run": {"env": {"HF_TOKEN": "abcd1234efgh", "NODES": 2, "ssh_key": "/home/u/.ssh/id"}},
        "data": [{"prompt_key": "question", "api_key": "xyz-9876"}, ("plain", 3)],
        "model": {"tokenizer": "gpt2"},
    }
    out = redact(obj)
    assert out["run"]["env"]["HF_TOKEN"] == REDACTED
    assert out["run"]["env"]["NODES"] == 2
    assert out["run"]["env"]["ssh_key"] == "/home/u/.ssh/id"
    assert out["data"][0] == {"prompt_key": "question", "api_key": REDACTED}
    assert out["data"][1] == ("plain", 3)
    assert out["model"]["tokenizer"] == "gpt2"
    # the input is not modified
    assert obj["run"]["env"]["HF_TOKEN"] == "abcd1234efgh"


def test_redact_keeps_references_and_empty_values() -> None:
    obj = {"HF_TOKEN": "${oc.env:HF_TOKEN}", "WANDB_API_KEY": None, "DB_PASSWORD": ""}
    assert redact(obj) == obj


def test_redact_extra_values_inside_innocent_strings() -> None:
    out = redact({"cmd": "curl -H 'x: s3cr3tvalue' host", "n": 1}, extra_values=["s3cr3tvalue", "ab"])
    assert "s3cr3tvalue" not in out["cmd"]
    assert REDACTED in out["cmd"]
    assert out["n"] == 1


@pytest.mark.parametrize(
    "text,secret",
    [
        ("export HF_TOKEN=abc123def456", "abc123def456"),
        ("WANDB_API_KEY: 0123456789abcdef", "0123456789abcdef"),
        ("db_password = 'hunter2222'", "hunter2222"),
        ("using " + "hf_" + "A" * 30 + " now", "hf_" + "A" * 30),
        ("key is " + "ghp_" + "b" * 36, "ghp_" + "b" * 36),
        ("nvapi-" + "x" * 30, "nvapi-" + "x" * 30),
    ],
)
def test_redact_text_masks_credentials(text: str, secret: str) -> None:
    out = redact_text(text)
    assert secret not in out
    assert REDACTED in out


def test_redact_text_keeps_innocent_and_references() -> None:
    text = "prompt_key=question max_tokens=128 HF_TOKEN=${HF_TOKEN} tokenizer: gpt2"
    assert redact_text(text) == text


def test_redact_text_explicit_values() -> None:
    out = redact_text("the value plainwords42 appears twice: plainwords42", values=["plainwords42"])
    assert "plainwords42" not in out
    assert out.count(REDACTED) == 2
    # values shorter than 4 characters are ignored (would mangle ordinary text)
    assert redact_text("a b c", values=["b"]) == "a b c"


def test_secret_values() -> None:
    env = {"HF_TOKEN": "tok-1", "NODES": "2", "DB_PASSWORD": "", "API_KEY": 1234, "prompt_key": "q"}
    assert sorted(secret_values(env)) == ["1234", "tok-1"]


@pytest.mark.parametrize("name", ["eod_token", "eot_token", "im_start_token", "fim_prefix_token",
                                  "tokenizer.eod_token"])
def test_tokenizer_special_tokens_are_not_secrets(name):
    assert not is_secret_name(name.rsplit(".", 1)[-1])


@pytest.mark.parametrize("name", ["user_token", "refresh_token", "API_TOKEN", "SLACK_TOKEN"])
def test_credential_tokens_stay_secret(name):
    assert is_secret_name(name)
