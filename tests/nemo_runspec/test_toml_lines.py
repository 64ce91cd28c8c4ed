"""Error lines from the one TOML key -> line scanner (env.toml and runspec blocks)."""

from __future__ import annotations

import pytest

from nemo_runspec import RunspecError, parse_text
from nemo_runspec.env import load_env_profile
from nemo_runspec.errors import EnvFileError


def test_env_toml_line_after_a_unicode_line_separator_in_a_value(tmp_path):
    # U+2028 is valid inside a TOML string; tomllib does not count it as a line break.
    path = tmp_path / "env.toml"
    path.write_text('[dev]\ndescription = "a\u2028b"\nnodes = "x"\n', encoding="utf-8")
    with pytest.raises(EnvFileError) as info:
        load_env_profile("dev", path)
    assert info.value.line == 3


def test_runspec_line_after_an_escaped_triple_quote_in_a_multiline_string():
    text = "\n".join([
        "# /// script",
        "# [tool.runspec]",
        '# name = "demo/recipe"',
        '# docs = """a\\"""b"""',
        "# resources.nodes = 0",
        "# ///",
        "",
    ])
    with pytest.raises(RunspecError) as info:
        parse_text(text, "recipe.py")
    assert info.value.line == 5
