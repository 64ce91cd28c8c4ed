"""Artifacts: named, versioned stage outputs, their stores and the ``art://`` filesystem.

=============================  ============================================
module                         holds
=============================  ============================================
``artifacts.registry``         :class:`ArtifactRegistry`, :func:`get_registry`
``artifacts.refs``             ``name[:version|alias]``, :class:`Artifact`
``artifacts.fsspec_backend``   the default store (any fsspec URL)
``artifacts.locking``          its per-artifact write lock, create-only writes
``artifacts.wandb_backend``    W&B artifacts
``artifacts.filesystem``       ``art://name:version/path`` for fsspec
=============================  ============================================

``nemo_runspec.artifacts.registry`` and ``nemo_runspec.artifacts.filesystem`` (the paths
the reference documents) are these modules too. ``${art:KEY,FIELD}`` in configs
is resolved by :mod:`nemo_runspec.config.resolvers`.
"""
