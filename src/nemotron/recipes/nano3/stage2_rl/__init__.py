"""Nano3 stage2_rl recipe scripts and configs."""
