"""The CLI toolkit recipe commands build on: global options, help panels, dry-run display.

==========================  =============================================
module                      holds
==========================  =============================================
``cli.context``             :class:`GlobalContext`, global-option parsing
``cli.recipe_config``       :class:`RecipeConfig`, :func:`parse_recipe_config`
``cli.meta``                :class:`RecipeMeta`: what a recipe's help shows
``cli.help``                the Rich help pages and the fast-help commands
``cli.recipe_typer``        :class:`RecipeTyper`
``cli.display``             the ``--dry-run`` display of a compiled job
==========================  =============================================

The reference documents these as ``nemo_runspec.cli_context``,
``nemo_runspec.recipe_config``, ``nemo_runspec.recipe_typer``,
``nemo_runspec.help`` and ``nemo_runspec.display``; those names are the same
module objects. Nothing here imports the ``nemotron`` CLI.
"""
