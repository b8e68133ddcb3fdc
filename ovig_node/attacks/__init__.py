"""OVIG attacks."""
