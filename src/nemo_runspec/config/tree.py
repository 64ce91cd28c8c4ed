"""The name of the type of configuration data, for annotations only.

``ConfigTree`` is a recipe or job config as the library passes it around: a
``DictConfig`` or a plain mapping (both read by the same keys). Import it under
``TYPE_CHECKING`` (the alias is a string at run time, and importing
:mod:`nemo_runspec.config` loads OmegaConf).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, TypeAlias

if TYPE_CHECKING:
    from omegaconf import DictConfig

ConfigTree: TypeAlias = "DictConfig | Mapping[str, object]"
