"""Issue 30, class 4: secrets by their shape, not only their name (nemo_runspec.secrets).

Well-known token shapes and URL passwords under innocent names are secrets
wherever secret names are: split into the secrets file, found for masking,
masked in text and never echoed by an error line; refused in profile keys that
Slurm shows to every user. Values that only resemble them (image references,
URLs with a port, ``user@host``) are not.
"""

from __future__ import annotations

import string
import textwrap
from pathlib import Path

import pytest
from hypothesis import strategies as st

from nemo_runspec.env import load_env_profile
from nemo_runspec.errors import EnvFileError, NemoRunspecError

ALNUM = string.ascii_letters + string.digits
UPPER = string.ascii_uppercase + string.digits


def _chars(alphabet: str, n: int, m: int):
    return st.text(alphabet=alphabet, min_size=n, max_size=m)


TOKENS = st.one_of(
    _chars(ALNUM, 20, 40).map(lambda t: "hf_" + t),
    _chars(ALNUM + "_-", 20, 48).map(lambda t: "sk-" + t),
    _chars(ALNUM + "_-", 20, 40).map(lambda t: "sk-proj-" + t),
    _chars(ALNUM + "_-", 20, 40).map(lambda t: "nvapi-" + t),
    st.tuples(st.sampled_from("pousr"), _chars(ALNUM, 36, 40)).map(lambda t: f"gh{t[0]}_{t[1]}"),
    _chars(ALNUM + "_", 22, 60).map(lambda t: "github_pat_" + t),
    _chars(ALNUM + "_-", 20, 30).map(lambda t: "glpat-" + t),
    st.tuples(st.sampled_from(["AKIA", "ASIA"]), _chars(UPPER, 16, 16)).map("".join),
    st.tuples(st.sampled_from("abposr"), _chars(ALNUM + "-", 10, 50)).map(lambda t: f"xox{t[0]}-{t[1]}"),
    _chars(ALNUM + "_-", 35, 35).map(lambda t: "AIza" + t),
)
PASSWORDS = _chars(ALNUM + "!%*+,;=~_.-", 1, 24).filter(lambda p: not p.startswith("$"))
URLS = st.builds(lambda scheme, user, pw, host: f"{scheme}://{user}:{pw}@{host}/db",
                 st.sampled_from(["postgres", "mysql", "redis", "https", "mongodb+srv", "amqp"]),
                 _chars(ALNUM, 1, 12), PASSWORDS, st.sampled_from(["db", "db.internal:5432", "10.0.0.7"]))
SECRETS = st.one_of(TOKENS, URLS)
INNOCENT_NAMES = st.sampled_from(["NOTE", "DB_URL", "CONFIG", "X", "MODEL_SOURCE", "endpoint", "misc_value"])


INNOCENT = st.one_of(
    st.sampled_from(["nvcr.io/nvidia/nemo:25.11", "docker://nvcr.io/nvidia/nemo:25.11", "https://host:8443/x",
                     "git+ssh://git@github.com:org/repo", "user@host", "s3://bucket/prefix", "hf://org/model",
                     "postgres://db/prod", "postgres://app@db/prod", "https://u:${PW}@h/x", "x://u:$PW@h",
                     "sk-short", "hf_short", "AKIA123", "pad_token", "meta-llama/Llama-3-8B"]),
    _chars(string.ascii_lowercase + "/-._", 0, 30),
)


CANNOT_BE_SECRET = [
    ('sbatch_options = {{ comment = "{v}" }}', "sbatch_options.comment"),
    ('job_name_prefix = "{v}"', "job_name_prefix"),
    ('startup_commands = ["huggingface-cli login --token {v}"]', "startup_commands"),
    ('srun_args = ["--comment={v}"]', "srun_args"),
    ('description = "uses {v}"', "description"),
    ('container_image = "{v}"', "container_image"),
]


@pytest.mark.parametrize(("line", "key"), CANNOT_BE_SECRET)
@pytest.mark.parametrize("value", ["hf_" + "Q" * 30, "xoxb-1234567890-abcdefghij", "AKIAIOSFODNN7EXAMPLE",
                                   "https://app:Sup3rSecret@registry.example/x"])
def test_refused_where_slurm_shows_it(tmp_path: Path, line: str, key: str, value: str) -> None:
    env = tmp_path / "env.toml"
    env.write_text(textwrap.dedent("""\
        [c]
        executor = "slurm"
        account = "a"
        partition = "p"
    """) + line.format(v=value) + "\n")
    with pytest.raises(EnvFileError) as exc:
        load_env_profile("c", env)
    text = str(exc.value)
    assert exc.value.line == 5 and exc.value.key == key
    assert text.startswith(f"{env}:5: key '{key}' in [c] holds what looks like a credential (value not shown)")
    secret_part = "Sup3rSecret" if "://" in value else value
    assert secret_part not in text


def test_env_vars_may_hold_them(tmp_path: Path) -> None:
    env = tmp_path / "env.toml"
    env.write_text('[c]\nexecutor = "slurm"\naccount = "a"\npartition = "p"\n'
                   'env_vars = { NOTE = "hf_' + "Q" * 30 + '" }\n')
    assert load_env_profile("c", env).values["env_vars"]["NOTE"].startswith("hf_")


@pytest.mark.parametrize("override", [
    "+run.env.env_vars.NOTE='hf_" + "Z" * 30,          # unclosed quote: YAML error
    "model.note=[sk-" + "a" * 30,                        # unclosed list
    "+run.env.env_vars.MY_PASSWORD='plain-secret-9",    # a secret name, no shape
    "model.url={x: postgres://app:Pw0rdXYZ@db/x",
])
def test_a_broken_override_never_echoes_its_secret(override: str) -> None:
    from omegaconf import OmegaConf

    from nemo_runspec.config import apply_overrides

    with pytest.raises(NemoRunspecError) as exc:
        apply_overrides(OmegaConf.create({"model": {"note": 1, "url": 1}}), [override])
    text = str(exc.value)
    for secret in ("Z" * 30, "a" * 30, "plain-secret-9", "Pw0rdXYZ"):
        assert secret not in text, text
