"""Nano3 stage0_pretrain recipe scripts and configs."""
