"""OVIG verify."""
