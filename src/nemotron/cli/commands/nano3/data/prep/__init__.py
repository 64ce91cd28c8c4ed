"""`nemotron nano3 data prep`: data preparation for each stage."""
