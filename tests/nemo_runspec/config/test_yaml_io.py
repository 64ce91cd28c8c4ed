"""Reading YAML as OmegaConf does (config/yaml_io.py): floats like ``1e-4``, duplicate keys,
bad syntax, bytes that are not UTF-8 and a non-mapping top level are one line with the file and line."""

from __future__ import annotations

import pytest

from nemo_runspec.config.yaml_io import read_yaml, to_yaml
from nemo_runspec.errors import ConfigError


def test_a_config_reads_as_omegaconf_reads_it(tmp_path):
    p = tmp_path / "c.yaml"
    p.write_text("lr: 1e-4\nname: x\n")
    data, text = read_yaml(p)
    assert data == {"lr": 1e-4, "name": "x"} and isinstance(data["lr"], float)
    assert text == "lr: 1e-4\nname: x\n"


def test_an_empty_file_is_an_empty_config(tmp_path):
    (tmp_path / "e.yaml").write_text("")
    assert read_yaml(tmp_path / "e.yaml") == ({}, "")


@pytest.mark.parametrize(("content", "line", "words"), [
    (b"a: 1\na: 2\n", 2, "invalid YAML"),
    (b"a: 1\nb: [1, 2\n", 3, "invalid YAML"),
    (b"a: 1\nb: \xff\n", 2, "not UTF-8 text (byte 0xff"),
    (b"- 1\n- 2\n", 1, "a config must be a mapping at the top level, not a list"),
])
def test_bad_files_are_one_line_at_their_line(tmp_path, content, line, words):
    p = tmp_path / "bad.yaml"
    p.write_bytes(content)
    with pytest.raises(ConfigError) as e:
        read_yaml(p)
    assert e.value.line == line and e.value.path == str(p)
    assert words in str(e.value) and "\n" not in str(e.value)


def test_to_yaml_keeps_the_key_order_and_block_style():
    assert to_yaml({"z": 1, "a": {"b": [1, 2]}, "u": "é"}) == "z: 1\na:\n  b:\n  - 1\n  - 2\nu: é\n"
