"""The ``[tool.runspec]`` table of a recipe script: found, parsed and checked (standard library).

======================  =====================================================
module                  holds
======================  =====================================================
``spec.pep723``         the PEP 723 ``# /// script`` block of a file, line by line
``spec.parser``         :func:`parse`, :func:`parse_text`: the block -> a frozen Runspec
``spec.models``         :class:`Runspec` and its tables (schema v1)
``spec.schema``         the JSON Schema of the table
``spec.cmd``            the ``run.cmd`` template: placeholders checked and filled in
``spec.scales``         ``[[tool.runspec.scales]]``: the scale matrix's entries (``scales/`` applies them)
``spec.toml_lines``     TOML key path -> line number, for error messages
``spec.discovery``      recipe scripts under a directory
======================  =====================================================

``nemo_runspec.parse`` and ``nemo_runspec.Runspec`` are the public names
(``nemo_runspec/__init__.py``); the reference's ``nemo_runspec._parser`` and
``nemo_runspec._models`` are these modules (``nemo_runspec._compat``).
"""
