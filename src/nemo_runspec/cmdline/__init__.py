"""The command line as data: what the global options and a recipe command's words mean.

==============================  ==============================================
module                          holds
==============================  ==============================================
``cmdline.context``             :class:`GlobalContext`, the global-option grammar
``cmdline.recipe_config``       :class:`RecipeConfig`, :func:`parse_recipe_config`
==============================  ==============================================

Plain parsing (stdlib and :mod:`nemo_runspec.errors`): the library's lower layers
(:mod:`nemo_runspec.job.run_config`, :mod:`nemo_runspec.job.compiled`, the pipeline, sweeps) read a
command line through these, never through :mod:`nemo_runspec.cli`, which sits above
them (Typer apps, Rich help). ``nemo_runspec.cmdline.context`` and
``nemo_runspec.cmdline.recipe_config`` are these same module objects.
"""
