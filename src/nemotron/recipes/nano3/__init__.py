"""Nemotron 3 Nano recipes: pretrain, SFT and RL stages with their data prep."""
