"""OVIG chain."""
