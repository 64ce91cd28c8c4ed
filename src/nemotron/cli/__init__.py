"""The `nemotron` command-line interface (Typer). Import nothing heavy here."""
