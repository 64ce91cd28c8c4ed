"""`nemotron nano3 model`: model commands (``import``: register an existing checkpoint)."""
