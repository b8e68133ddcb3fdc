"""OVIG nodes."""
