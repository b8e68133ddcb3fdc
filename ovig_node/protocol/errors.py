"""Errors of the protocol layer.

OvigError
└── SpecError (ValueError)      a task spec that is malformed or breaks a protocol rule
"""

from __future__ import annotations

from ovig_node.errors import OvigError


class SpecError(OvigError, ValueError):
    """A task spec we refuse; the message names the field and the rule."""
