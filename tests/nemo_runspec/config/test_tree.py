"""ConfigTree: a DictConfig or a plain mapping (config/tree.py)."""

from __future__ import annotations

import typing
from collections.abc import Mapping

from omegaconf import DictConfig

from nemo_runspec.config import tree


def test_the_alias_names_a_dictconfig_or_a_plain_mapping():
    def takes(cfg: tree.ConfigTree) -> None: ...

    hint = typing.get_type_hints(takes, localns={"ConfigTree": tree.ConfigTree, "DictConfig": DictConfig,
                                                 "Mapping": Mapping})["cfg"]
    assert set(typing.get_args(hint)) == {DictConfig, Mapping[str, object]}

