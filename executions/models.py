"""Execution records (see the governed-execution work)."""
