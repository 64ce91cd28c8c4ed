"""`nemotron nano3 data`: data commands."""
