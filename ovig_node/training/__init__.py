"""OVIG training."""
