"""Judging intervals (protocol sections 2.5 and 5): replay, compare over every coordinate, verdict."""
