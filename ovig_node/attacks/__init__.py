"""Dishonest providers: changes to training in chosen intervals, then well-formed evidence of them.

An attack is a plugin: any ``package.module:callable`` returning an :class:`Attack` loads through
:func:`load_attack`, the same way as the built-in ones in :data:`BUILTIN`.
"""

from __future__ import annotations

from ovig_node.attacks.base import Attack, AttackContext, load_attack
from ovig_node.attacks.builtin import BUILTIN

__all__ = ["BUILTIN", "Attack", "AttackContext", "load_attack"]
