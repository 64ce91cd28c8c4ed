"""The CLI toolkit recipe commands build on: global options, help panels, dry-run display.

==========================  =============================================
module                      holds
==========================  =============================================
``cli.context``             alias of ``cmdline.context`` (:class:`GlobalContext`)
``cli.recipe_config``       alias of ``cmdline.recipe_config`` (:class:`RecipeConfig`)
``cli.meta``                :class:`RecipeMeta`: what a recipe's help shows
``cli.help``                the Rich help pages and the fast-help commands
``cli.recipe_typer``        :class:`RecipeTyper`
``cli.display``             the ``--dry-run`` display of a compiled job
==========================  =============================================

The reference documents these as ``nemo_runspec.cli_context``,
``nemo_runspec.recipe_config``, ``nemo_runspec.recipe_typer``,
``nemo_runspec.help`` and ``nemo_runspec.display``; those names are the same
module objects (``nemo_runspec._compat``). Nothing here imports the ``nemotron`` CLI.
"""
