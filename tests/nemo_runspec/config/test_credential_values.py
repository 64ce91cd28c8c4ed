"""Credential-shaped values of a job config (config/credential_values.py): ``run.not_secret``
keeps listed values verbatim; any other such value under an ordinary key is named once on stderr."""

from __future__ import annotations

import pytest

from nemo_runspec.config.credential_values import not_secret_values, warn_credential_shaped
from nemo_runspec.errors import ConfigError

TOKEN = "hf_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7"


def test_not_secret_lists_the_values_at_its_dotted_keys():
    data = {"model": {"id": TOKEN, "n": 3}, "run": {"not_secret": ["model.id", "model.n", "nowhere.x"]}}
    assert not_secret_values(data) == [TOKEN]  # only strings; a missing key is no value
    assert not_secret_values({"run": {}}) == []
    assert not_secret_values({}) == []


@pytest.mark.parametrize("bad", ["model.id", ["model.id", 3]])
def test_not_secret_must_be_a_list_of_dotted_keys(bad):
    with pytest.raises(ConfigError) as e:
        not_secret_values({"run": {"not_secret": bad}})
    assert e.value.key == "run.not_secret"


def test_a_credential_under_an_ordinary_key_is_named_with_the_fix(capsys):
    warn_credential_shaped({"model": {"urls": ["ok", TOKEN]}})
    err = capsys.readouterr().err
    assert "warning: the value of model.urls[1] looks like a credential" in err
    assert "+run.not_secret=[model.urls[1]]" in err and TOKEN not in err


def test_listed_values_secret_names_and_the_environment_are_not_reported(capsys):
    warn_credential_shaped({"model": {"id": TOKEN}, "run": {"not_secret": ["model.id"]}})
    warn_credential_shaped({"hf_token": TOKEN, "run": {"env": {"env_vars": {"X": TOKEN}}}, "env_sources": TOKEN})
    assert capsys.readouterr().err == ""
