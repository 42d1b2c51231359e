"""Horovod's horovod.common names used by scripts and tests."""
