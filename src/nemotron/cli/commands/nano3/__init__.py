"""`nemotron nano3`: Nemotron 3 Nano training and data-prep commands."""
