"""Nano3 stage1_sft recipe scripts and configs."""
