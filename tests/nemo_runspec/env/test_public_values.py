"""Credentials in profile values Slurm shows to every user (env/public_values.py): found by key
path, values never shown, keys that may hold secrets left alone."""

from __future__ import annotations

from nemo_runspec.env.public_values import MAY_HOLD_SECRETS, credential_key, problem

TOKEN = "hf_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7"


def test_a_credential_anywhere_in_a_public_value_is_found_by_its_key_path():
    assert credential_key({"comment": TOKEN}) == ("comment",)
    assert credential_key({"mounts": ["/a:/a", f"/b:/{TOKEN}"]}) == ("mounts",)
    assert credential_key({"ray": {"head": {"opt": TOKEN}}}) == ("ray", "head", "opt")


def test_keys_that_may_hold_secrets_and_plain_values_pass():
    assert credential_key({"env_vars": {"HF_TOKEN": TOKEN}, "client_secret": TOKEN}) is None
    assert credential_key({"comment": "a plain comment", "nodes": 2}) is None
    assert {"env_vars", "client_secret", "secret_vars"} <= MAY_HOLD_SECRETS


def test_the_problem_names_the_key_and_never_the_value():
    text = problem(("ray", "head", "opt"), "profile 'p'")
    assert "key 'ray.head.opt' in profile 'p'" in text and "value not shown" in text
    assert TOKEN not in text
