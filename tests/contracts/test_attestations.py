"""Attestations (protocol 8.4): ``attest`` announces its sender's signed attestation and does nothing else.

The promises tested: announcing costs only gas and changes nothing anyone is owed or can do (no state, no
value, whatever it claims: the signature is checked by readers, tests/test_nodes.py and tests/test_api.py),
so a flood of forged attestations can neither move money nor block a task; and it is always in the sender's
name, so nobody can announce, or pre-empt, an attestation in a watcher's name.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import ape
import pytest
from helpers import Evidence

pytestmark = pytest.mark.usefixtures("balance_invariant")
SOUND = 1


def test_attest_emits_what_it_was_given_and_changes_nothing(
    tasks: Any, opened_task: Callable[..., tuple[int, Evidence]], watcher: Any, watcher2: Any
) -> None:
    task, _ = opened_task()
    before = (tasks.getTask(task), tasks.commitCount(), tasks.credits(watcher), tasks.balance)
    signature = bytes(range(65))
    tx = tasks.attest(task, 3, SOUND, "micro8 on a CPU", "bafyreport", "bafydoc", signature, sender=watcher2)
    [event] = tx.events.filter(tasks.Attested)
    assert (
        event.task,
        event.k,
        event.watcher,
        event.verdict,
        event.profile,
        event.reportCID,
        event.attestationCID,
        bytes(event.signature),
    ) == (task, 3, watcher2.address, SOUND, "micro8 on a CPU", "bafyreport", "bafydoc", signature)
    assert len(tx.events) == 1
    assert (tasks.getTask(task), tasks.commitCount(), tasks.credits(watcher), tasks.balance) == before
    # Nothing is checked: an interval out of range, a task that does not exist, any verdict, an empty signature.
    tasks.attest(2**200, 2**255, 7, "", "", "", b"", sender=watcher2)
    with ape.reverts():  # not payable: value is refused before any code runs
        tasks.attest(task, 3, SOUND, "", "", "", b"", sender=watcher2, value=1)
    assert tasks.balance == before[3]
