"""OVIG storage."""
