"""nemotron: thin CLI over nemo_runspec for the Nemotron training recipes."""

__version__ = "0.1.0"
