"""Artifact lookup errors (kept under their reference names for compatibility)."""

from __future__ import annotations

from nemo_runspec.errors import NemoRunspecError


class ArtifactError(NemoRunspecError, LookupError):
    """Base class for artifact registry errors."""


class ArtifactNotFoundError(ArtifactError):
    """No artifact with this name exists in the registry."""


class ArtifactVersionNotFoundError(ArtifactError):
    """The artifact exists but not the requested version or alias."""


class ArtifactPublishError(ArtifactError):
    """Publishing failed; nothing was registered."""
