"""Command groups of the `nemotron` CLI, one module or package per group."""
