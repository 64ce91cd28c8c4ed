"""Names for the types of configuration data, for annotations only.

``Plain`` is what YAML, JSON and ``OmegaConf.to_container`` give: scalars, lists and
string-keyed dicts of them. ``ConfigTree`` is a recipe or job config as the library
passes it around: a ``DictConfig`` or a plain mapping (both read by the same keys).
Import these under ``TYPE_CHECKING``: at run time they are strings, so importing
this module costs nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, TypeAlias

if TYPE_CHECKING:
    from omegaconf import DictConfig

Plain: TypeAlias = "str | int | float | bool | None | list[Plain] | dict[str, Plain]"
PlainDict: TypeAlias = "dict[str, Plain]"
ConfigTree: TypeAlias = "DictConfig | Mapping[str, object]"
