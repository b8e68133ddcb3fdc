"""DrandBeacon: drand's quicknet round 1000 verifies on-chain to drand's published randomness; a
signature of another round, under another key, malformed, or malleated by a torsion point is refused;
the devnet beacon's signatures take the same path; the contract's round clock is the mirror's; as a
randomness backend it names the first round DELAY seconds after an action, ready once submitted.

Real BLS verification on anvil's EIP-2537 precompiles (Ape's anvil runs the prague hardfork)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import ape
import pytest
from helpers import revert_data
from py_ecc.bls.hash_to_curve import map_to_curve_G2
from py_ecc.optimized_bls12_381 import FQ, FQ2, b, curve_order, is_inf, multiply, normalize
from py_ecc.optimized_bls12_381 import add as g1_add

from ovig_node.devnet.beacon import DEVNET_BEACON_SECRET, devnet_network
from ovig_node.protocol import drand

# drand's quicknet as deploy/drand.json records it, with its round 1000 as the network published it.
QUICKNET_ENTRY = drand.known_networks(Path(__file__).resolve().parents[2] / "deploy" / "drand.json")["quicknet"]
QUICKNET = QUICKNET_ENTRY.network
ROUND_1000 = QUICKNET_ENTRY.known_signature
RANDOMNESS_1000 = QUICKNET_ENTRY.known_randomness
PAIRING = "0x000000000000000000000000000000000000000F"
DELAY = 30  # seconds from an action to its target round (deploy/plan.py's for public chains)


def deploy(project: Any, owner: Any, network: drand.Network) -> Any:
    key = drand.g2_for_contract(network.public_key)
    return owner.deploy(project.DrandBeacon, key, network.genesis, network.period, DELAY)


@pytest.fixture(scope="module")
def quicknet(project: Any, owner: Any) -> Any:
    return deploy(project, owner, QUICKNET)


def test_quicknet_round_1000_verifies_to_drands_published_randomness(quicknet: Any, keeper: Any) -> None:
    assert QUICKNET_ENTRY.known_round == 1000
    assert quicknet.randomnessOf(1000) == b"\x00" * 32
    tx = quicknet.submitRound(1000, drand.g1_for_contract(ROUND_1000), sender=keeper)
    assert tx.return_value == RANDOMNESS_1000 == drand.randomness(ROUND_1000)
    [event] = tx.events.filter(quicknet.RoundVerified)
    assert (event.round, event.randomness, event.by) == (1000, RANDOMNESS_1000, keeper.address)
    assert quicknet.randomnessOf(1000) == RANDOMNESS_1000
    # Submitted once, reused: a second submission returns the value and verifies nothing again.
    again = quicknet.submitRound(1000, drand.g1_for_contract(ROUND_1000), sender=keeper)
    assert again.return_value == RANDOMNESS_1000 and not list(again.events.filter(quicknet.RoundVerified))
    assert again.gas_used < tx.gas_used // 4


def test_a_signature_of_another_round_or_under_another_key_is_refused(project: Any, owner: Any, quicknet: Any) -> None:
    signature = drand.g1_for_contract(ROUND_1000)
    with ape.reverts(quicknet.InvalidBeaconSignature, round=1001):
        quicknet.submitRound(1001, signature, sender=owner)
    devnet = deploy(project, owner, devnet_network(QUICKNET.genesis))
    with ape.reverts(devnet.InvalidBeaconSignature, round=1000):
        devnet.submitRound(1000, signature, sender=owner)
    assert quicknet.randomnessOf(1001) == devnet.randomnessOf(1000) == b"\x00" * 32


def _off_curve(point: bytes) -> bytes:
    y = int.from_bytes(point[64:], "big")
    return point[:64] + (y ^ 1).to_bytes(64, "big")


def _torsion_point() -> tuple[FQ, FQ, FQ]:
    """A point of order dividing G1's cofactor: r * P for a curve point P outside the subgroup. Adding it
    to a signature leaves every pairing unchanged, so only a subgroup check tells the two apart."""
    p = FQ.field_modulus
    x = 4
    while True:
        rhs = (x**3 + b.n) % p
        y = pow(rhs, (p + 1) // 4, p)
        if y * y % p == rhs:
            torsion = multiply((FQ(x), FQ(y), FQ.one()), curve_order)
            if not is_inf(torsion):
                return torsion
        x += 1


def test_malformed_and_malleated_signatures_are_refused(quicknet: Any, owner: Any) -> None:
    signature = drand.g1_for_contract(ROUND_1000)
    with ape.reverts(quicknet.MalformedBeaconSignature, length=127):
        quicknet.submitRound(1000, signature[:127], sender=owner)
    with ape.reverts(quicknet.NoRoundZero):
        quicknet.submitRound(0, signature, sender=owner)
    with ape.reverts(quicknet.BlsPrecompileFailed, precompile=PAIRING):
        quicknet.submitRound(1000, _off_curve(signature), sender=owner)
    # A coordinate at or above p (x + p encodes the same residue): refused, so no round has two encodings.
    x = int.from_bytes(signature[:64], "big") + FQ.field_modulus
    with ape.reverts(quicknet.BlsPrecompileFailed, precompile=PAIRING):
        quicknet.submitRound(1000, x.to_bytes(64, "big") + signature[64:], sender=owner)
    # The genuine signature plus a torsion point passes the pairing equation but not the subgroup check.
    genuine = (FQ(int.from_bytes(signature[:64], "big")), FQ(int.from_bytes(signature[64:], "big")), FQ.one())
    mx, my = normalize(g1_add(genuine, _torsion_point()))
    with ape.reverts(quicknet.BlsPrecompileFailed, precompile=PAIRING):
        quicknet.submitRound(1000, int(mx).to_bytes(64, "big") + int(my).to_bytes(64, "big"), sender=owner)
    assert quicknet.randomnessOf(1000) == b"\x00" * 32


def test_the_devnet_beacons_rounds_verify_and_its_clock_is_the_mirrors(project: Any, owner: Any) -> None:
    network = devnet_network(genesis=1_700_000_000)
    beacon = deploy(project, owner, network)
    assert beacon.publicKey() == drand.g2_for_contract(network.public_key)
    for round_ in (1, 2, 77):
        signature = drand.sign(DEVNET_BEACON_SECRET, round_)
        drand.verify(network.public_key, round_, signature)
        tx = beacon.submitRound(round_, drand.g1_for_contract(signature), sender=owner)
        assert tx.return_value == drand.randomness(signature)
    for t in (0, network.genesis - 1, network.genesis, network.genesis + 1, network.genesis + 3, network.genesis + 4):
        assert beacon.roundAt(t) == network.round_at(t)
    assert [beacon.roundTime(r) for r in (1, 2, 10)] == [network.round_time(r) for r in (1, 2, 10)]
    with ape.reverts(beacon.NoRoundZero):
        beacon.roundTime(0)


def test_the_constructor_refuses_a_key_that_is_not_a_g2_point(project: Any, owner: Any) -> None:
    key = drand.g2_for_contract(QUICKNET.public_key)
    invalid = revert_data("InvalidBeaconParameters()", [], [])
    for bad in (key[:255], bytes(256)):
        with ape.reverts(invalid):
            owner.deploy(project.DrandBeacon, bad, QUICKNET.genesis, QUICKNET.period, DELAY)
    for genesis, period, delay in ((0, 3, DELAY), (QUICKNET.genesis, 0, DELAY), (QUICKNET.genesis, 3, 0)):
        with ape.reverts(invalid):
            owner.deploy(project.DrandBeacon, key, genesis, period, delay)
    off_curve = key[:255] + bytes([key[255] ^ 1])
    # On the curve but outside G2's prime-order subgroup: SWU's image before its cofactor is cleared.
    x, y = normalize(map_to_curve_G2(FQ2([5, 7])))
    assert not is_inf(multiply((x, y, FQ2.one()), curve_order))
    off_subgroup = b"".join(int(c).to_bytes(64, "big") for c in (*x.coeffs, *y.coeffs))
    for bad in (off_curve, off_subgroup):
        with ape.reverts(revert_data("BlsPrecompileFailed(address)", ["address"], [PAIRING])):
            owner.deploy(project.DrandBeacon, bad, QUICKNET.genesis, QUICKNET.period, DELAY)


def test_as_a_backend_it_targets_the_first_round_delay_after_an_action(quicknet: Any, keeper: Any) -> None:
    assert quicknet.DELAY() == DELAY
    for t in (QUICKNET.genesis - DELAY, QUICKNET.genesis, QUICKNET.genesis + 1, QUICKNET.genesis + 2998):
        target = quicknet.targetOf(123, t)  # the block number plays no part
        assert target == QUICKNET.round_at(t + DELAY) == quicknet.roundAt(t + DELAY)
        assert QUICKNET.round_time(target) >= t + DELAY > QUICKNET.round_time(target) - QUICKNET.period or target == 1
    assert quicknet.targetOf(0, QUICKNET.genesis + 2967) == 1000
    assert quicknet.valueOf(1000) == (True, b"\x00" * 32)  # a 2023 round nobody submitted here: gone
    quicknet.submitRound(1000, drand.g1_for_contract(ROUND_1000), sender=keeper)
    assert quicknet.valueOf(1000) == (True, RANDOMNESS_1000)
    assert quicknet.valueOf(2**63) == (False, b"\x00" * 32)  # a round far in the future


def test_a_round_nobody_submits_is_gone_a_day_after_its_time(project: Any, owner: Any, chain: Any) -> None:
    network = devnet_network(genesis=chain.pending_timestamp - 3_000)
    beacon = deploy(project, owner, network)
    lifetime = beacon.TARGET_LIFETIME()
    assert lifetime == 24 * 3600
    late, kept = network.latest_round(chain.pending_timestamp), 5
    beacon.submitRound(kept, drand.g1_for_contract(drand.sign(DEVNET_BEACON_SECRET, kept)), sender=owner)
    chain.pending_timestamp = network.round_time(late) + lifetime - 1
    chain.mine()
    assert beacon.valueOf(late) == (False, b"\x00" * 32)  # still awaited
    chain.pending_timestamp = network.round_time(late) + lifetime
    chain.mine()
    assert beacon.valueOf(late) == (True, b"\x00" * 32)  # gone: the consumers' fallback
    assert beacon.valueOf(late + 1)[0] is False
    value = drand.randomness(drand.sign(DEVNET_BEACON_SECRET, kept))
    assert beacon.valueOf(kept) == (True, value)  # a submitted round never goes
    # Submitted late, a round is a round again: whoever cares submits before anyone draws.
    beacon.submitRound(late, drand.g1_for_contract(drand.sign(DEVNET_BEACON_SECRET, late)), sender=owner)
    assert beacon.valueOf(late)[1] != b"\x00" * 32
    assert beacon.valueOf(0) == (False, b"\x00" * 32)


def test_the_round_clock_refuses_a_round_past_64_bits(quicknet: Any) -> None:
    last = QUICKNET.genesis + (2**64 - 2) * QUICKNET.period  # round 2^64 - 1
    assert quicknet.roundAt(last) == 2**64 - 1
    with ape.reverts(quicknet.RoundOutOfRange, timestamp=last + 1):
        quicknet.roundAt(last + 1)
