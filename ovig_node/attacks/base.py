"""The attack interface: a dishonest provider's change is a set of training hooks
(:class:`ovig_node.training.hooks.StepHooks`), loaded by name or as a plugin.

An attack overrides only the hooks it changes (the batch, the learning rate, the precision, the gradients,
the update, the optimizer state, exact mode's rounding, what it publishes), in the intervals it fakes; the
training loop calls them without knowing attacks exist (ovig_node.training.hooks says in which order).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from ovig_node.errors import OvigError
from ovig_node.training.hooks import StepContext, StepHooks

# An attack is a set of training hooks; the names the attacks and their plugins have always used.
Attack = StepHooks
AttackContext = StepContext


class AttackError(OvigError, ValueError):
    """An attack that cannot be loaded or configured."""


def load_attack(target: str, *, intervals: frozenset[int], **params: Any) -> Attack:
    """An attack by built-in name (``micro_batch_drop``) or plugin path (``package.module:callable``)."""
    from ovig_node.attacks.builtin import BUILTIN

    found: Callable[..., Attack] | str = BUILTIN.get(target, target)
    if isinstance(found, str):  # a plugin's path, or a built-in one named by its path (the adaptive attacker)
        module_name, _, attr = found.partition(":")
        if not attr:
            raise AttackError(f"unknown attack {target!r}: not built in ({', '.join(BUILTIN)}) nor module:callable")
        try:
            factory: Any = getattr(importlib.import_module(module_name), attr)
        except (ImportError, AttributeError) as exc:
            raise AttackError(f"cannot load attack {target!r}: {exc}") from None
    else:
        factory = found
    try:
        attack = factory(intervals=intervals, **params)
    except TypeError as exc:
        raise AttackError(f"attack {target!r} rejects its parameters: {exc}") from None
    if not isinstance(attack, Attack):
        raise AttackError(f"{target!r} returned {type(attack).__name__}, not an Attack")
    return attack
