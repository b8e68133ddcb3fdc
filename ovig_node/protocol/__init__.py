"""OVIG protocol."""
