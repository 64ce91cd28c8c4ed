"""The W&B boundary fake (tests/wandb_offline.py) cannot drift from the real API: every
method it answers has the signature of the installed ``wandb`` package's own
(parameter names, order, kinds and defaults), so a wandb upgrade that changes a call
``WandbBackend`` makes fails here instead of passing against a stale fake."""

from __future__ import annotations

import inspect

import pytest

from tests import wandb_offline

wandb = pytest.importorskip("wandb")  # the test extra installs it; CI fails on a skip


def _shape(func) -> list[tuple[str, object, object]]:
    return [(p.name, p.kind, p.default) for p in inspect.signature(func).parameters.values()]


def _public_methods(cls: type) -> list[str]:
    return sorted(n for n, v in vars(cls).items() if callable(v) and not n.startswith("_"))


@pytest.mark.parametrize(("fake", "real"), [(wandb_offline.FakeApi, wandb.Api),
                                            (wandb_offline.FakeArtifact, wandb.Artifact)])
def test_every_method_of_the_fake_has_the_real_signature(fake, real):
    methods = _public_methods(fake)
    assert methods, fake
    for name in methods:
        assert hasattr(real, name), f"{real.__name__} has no {name}: the fake answers a call the real API lacks"
        assert _shape(getattr(fake, name)) == _shape(getattr(real, name)), name


def test_the_fake_covers_every_wandb_api_call_the_backend_makes():
    """Each ``api.NAME(`` / ``.NAME(`` of wandb.Api that WandbBackend calls is answered by the fake."""
    import re
    from pathlib import Path

    from nemo_runspec.artifacts import wandb_backend

    source = Path(wandb_backend.__file__).read_text()
    api_calls = {m for m in re.findall(r"\bapi\(\)\.(\w+)\(|\bapi\.(\w+)\(", source) for m in m if m}
    assert api_calls and api_calls <= set(_public_methods(wandb_offline.FakeApi)), api_calls
