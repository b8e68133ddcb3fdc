"""OVIG api."""
