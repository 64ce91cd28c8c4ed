"""Fixtures shared with the backends' tests."""

from tests.nemo_runspec.backends.conftest import compile_hello  # noqa: F401 - a fixture
