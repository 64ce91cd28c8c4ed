"""Scale matrices: the GPU types, node counts and precisions a recipe is known to work at.

A recipe declares them in its runspec, ``[[tool.runspec.scales]]`` (docs/runspec/v1/spec.md
section 8); every compiled job picks its cell (:mod:`.select`), applies the cell's
overrides under the command line's (:mod:`.apply`), and a job outside the matrix is
refused with the nearest supported cells unless ``--allow-untested-scale``.

==================  ====================================================
module              holds
==================  ====================================================
``spec.scales``     :class:`ScaleEntry`, reading and checking the runspec table (part of
                    ``[tool.runspec]``, so in ``spec/``; ``scales.model`` is its old name)
``scales.select``   the cell of a job; the nearest cells of one outside
``scales.apply``    the cell's overrides applied to a compiled job, with provenance
``scales.show``     the matrix as a table (``--scales``, ``nemotron runspec scales``)
==================  ====================================================
"""
