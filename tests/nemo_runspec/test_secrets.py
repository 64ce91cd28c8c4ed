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
    "foreign_key", "partition_key", "hash_key", "join_key", "ssh_key_file", "public_key",
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
        "run": {"env": {"HF_TOKEN": "abcd1234efgh", "NODES": 2, "ssh_key_path": "/home/u/.ssh/id"}},
        "data": [{"prompt_key": "question", "api_key": "xyz-9876"}, ("plain", 3)],
        "model": {"tokenizer": "gpt2"},
    }
    out = redact(obj)
    assert out["run"]["env"]["HF_TOKEN"] == REDACTED
    assert out["run"]["env"]["NODES"] == 2
    assert out["run"]["env"]["ssh_key_path"] == "/home/u/.ssh/id"
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
                                  "tokenizer.eod_token", "tokenizer.special_tokens.pad_token"])
def test_tokenizer_special_tokens_are_not_secrets(name):
    """Dotted config paths are judged whole (their last words decide), not stripped first."""
    assert not is_secret_name(name)


@pytest.mark.parametrize("name", ["user_token", "refresh_token", "API_TOKEN", "SLACK_TOKEN"])
def test_credential_tokens_stay_secret(name):
    assert is_secret_name(name)


# ---------------------------------------------------------------- the one secret-value rule

def test_find_secret_values_walks_every_depth_and_dedups() -> None:
    from nemo_runspec.secrets import find_secret_values

    job = {
        "run": {"env": {"env_vars": {"HF_TOKEN": "hf-value-1", "NODES": "2"}}},
        "data": [{"api_key": "key-value-2"}, ({"password": "pw-value-3"},)],
        "again": {"HF_TOKEN": "hf-value-1"},
        "port_secret": 31337,
    }
    assert find_secret_values(job, {"db_password": "pw-value-4"}) == [
        "hf-value-1", "key-value-2", "pw-value-3", "31337", "pw-value-4",
    ]


@pytest.mark.parametrize("value", [True, False, None, "", "${oc.env:HF_TOKEN}", "${art:data,path}"])
def test_not_secret_values(value) -> None:
    from nemo_runspec.secrets import find_secret_values, is_secret_value

    assert is_secret_value(value) is False
    assert find_secret_values({"HF_TOKEN": value}) == []


def test_reference_inside_text_is_a_value() -> None:
    """Only a whole ``${...}`` is a reference; text around one is a literal."""
    from nemo_runspec.secrets import find_secret_values

    assert find_secret_values({"token": "x${a}y"}) == ["x${a}y"]
    assert find_secret_values({"token": "${a}${b}"}) == ["${a}${b}"]


def test_label_tables_are_skipped() -> None:
    from nemo_runspec.secrets import find_secret_values

    run = {"env_sources": {"env_vars.HF_TOKEN": "env.toml:12 [dev]"}, "env": {"HF_TOKEN": "real-1"}}
    assert find_secret_values(run) == ["real-1"]


def test_short_values_are_hidden_under_their_key_but_not_searched_in_text() -> None:
    from nemo_runspec.secrets import MIN_SEARCH_LENGTH, searchable

    short = "a" * (MIN_SEARCH_LENGTH - 1)
    long = "b" * MIN_SEARCH_LENGTH
    assert searchable([short, long, None]) == [long]
    out = redact({"api_key": short, "note": f"say {short} and {long}"}, extra_values=[short, long])
    assert out["api_key"] == REDACTED
    assert out["note"] == f"say {short} and {REDACTED}"


def test_bools_are_kept_everywhere() -> None:
    """A flag under a secret-looking name is not a secret: kept in objects and in text."""
    assert redact({"use_auth_token": True}) == {"use_auth_token": True}
    assert redact_text("use_auth_token: true\nHF_TOKEN=false") == "use_auth_token: true\nHF_TOKEN=false"
    assert redact_text("HF_TOKEN=abcdefgh") == f"HF_TOKEN={REDACTED}"


def test_saved_configs_and_script_config_use_the_same_rule() -> None:
    """What the script config drops, the saved files redact: the same values, no more."""
    from omegaconf import OmegaConf

    from nemo_runspec.config.job_config import _strip_secrets
    from nemo_runspec.config.jobdir import render_configs
    from nemo_runspec.secrets import find_secret_values

    data = {
        "model": {"api_key": "sk-literal-value", "use_auth_token": True, "hf_token": "${oc.env:HF_TOKEN}",
                  "pad_token": "<pad>"},
        "run": {"env": {"env_vars": {"WANDB_API_KEY": 1234567}}},
    }
    dropped: list[str] = []
    stripped = _strip_secrets(data, dropped=dropped)
    assert sorted(dropped) == ["model.api_key", "run.env.env_vars.WANDB_API_KEY"]
    assert stripped["model"] == {"use_auth_token": True, "hf_token": "${oc.env:HF_TOKEN}", "pad_token": "<pad>"}
    assert sorted(find_secret_values(data)) == ["1234567", "sk-literal-value"]

    cfg = OmegaConf.create(data)
    files = render_configs(cfg, OmegaConf.create({"model": data["model"]}))
    for text in files.values():
        assert "sk-literal-value" not in text and "1234567" not in text
        assert "use_auth_token: true" in text and "${oc.env:HF_TOKEN}" in text and "<pad>" in text


@pytest.mark.parametrize("name", [
    "SSH_KEY", "MYPASSWORD", "dbpassword", "DB_PASS", "SMTP_PASS", "MySecretValue", "ClientApikey",
    "PRIVATE_KEY", "MY_CREDENTIALS", "userPassphrase",
])
def test_secret_names_found_inside_words_and_by_pass(name):
    assert is_secret_name(name)


@pytest.mark.parametrize("name", ["first_pass", "num_pass", "pass", "BYPASS", "password_file", "SSH_KEY_PATH",
                                  "secret_env"])
def test_pass_counts_and_paths_are_not_secret(name):
    assert not is_secret_name(name)


@pytest.mark.parametrize(("args", "found"), [
    (["HF_TOKEN=abc123"], ["HF_TOKEN=abc123"]),
    (["--api-key", "k1", "--seed", "3"], ["k1"]),
    (["--password=pw"], ["--password=pw"]),
    (["hf_" + "a" * 24], ["hf_" + "a" * 24]),
    (["train.lr=1", "--seed", "3", "HF_HOME=/x", "--api-key"], []),
    (["USE_AUTH_TOKEN=true", "HF_TOKEN=${oc.env:HF_TOKEN}"], []),
])
def test_secret_arguments(args, found):
    from nemo_runspec.secrets import secret_arguments

    assert secret_arguments(args) == found
