"""Nano3 evaluation recipe script and configs (NeMo Evaluator; CPU fallback for the tiny chain)."""
