"""What a backend declares of env.toml (env/keys.py): the keys it reads, its own typed ones
after the shared ones it lists, each once; the profile model gets a declared key's type,
bounds and check."""

from __future__ import annotations

from nemo_runspec.env.keys import Key, KeyProblem, ProfileKeys


def test_read_lists_the_shared_keys_then_its_own_once() -> None:
    keys = ProfileKeys(keys={"a": Key(int), "retries": Key(int)}, reads=("retries", "partition"))
    assert keys.read() == ("retries", "partition", "a")
    assert ProfileKeys().read() == () and not ProfileKeys().lenient


def test_a_declared_key_becomes_a_field_with_its_type_bounds_and_check() -> None:
    import pytest
    from pydantic import ValidationError, create_model

    from nemo_runspec.env.model import _field

    def even(value: int) -> int:
        if value % 2:
            raise ValueError(f"{value} is odd")
        return value

    model = create_model("M", n=_field(Key(int, ge=0, check=even)))
    assert model(n=4).n == 4 and model().n is None
    with pytest.raises(ValidationError, match="3 is odd"):
        model(n=3)
    with pytest.raises(ValidationError, match="greater than or equal to 0"):
        model(n=-2)
    assert KeyProblem("job_dir", "bad").hint is None
