"""drand off-chain: the mirror verifies quicknet's round 1000 and refuses what the contract refuses; the
devnet beacon serves drand's HTTP API with rounds that verify, and nothing from the future."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest

from ovig_node.chain.randomness import BeaconRelays
from ovig_node.devnet.beacon import DEVNET_BEACON_SECRET, chain_info, devnet_network, make_handler
from ovig_node.protocol import drand

QUICKNET = drand.known_networks(Path(__file__).resolve().parents[1] / "deploy" / "drand.json")["quicknet"]
QUICKNET_KEY = QUICKNET.network.public_key
ROUND_1000 = QUICKNET.known_signature


def test_the_mirror_verifies_quicknet_and_refuses_other_rounds_keys_and_junk() -> None:
    assert QUICKNET.known_round == 1000
    drand.verify(QUICKNET_KEY, 1000, ROUND_1000)
    assert drand.randomness(ROUND_1000) == QUICKNET.known_randomness
    with pytest.raises(drand.DrandError, match="not the signature of round 1001"):
        drand.verify(QUICKNET_KEY, 1001, ROUND_1000)
    with pytest.raises(drand.DrandError, match="not the signature of round 1000"):
        drand.verify(drand.public_key_of(DEVNET_BEACON_SECRET), 1000, ROUND_1000)
    with pytest.raises(drand.DrandError, match="48 bytes, not 47"):
        drand.verify(QUICKNET_KEY, 1000, ROUND_1000[:47])
    with pytest.raises(drand.DrandError, match="not a G1 point"):
        drand.verify(QUICKNET_KEY, 1000, bytes([ROUND_1000[0] & 0x7F]) + ROUND_1000[1:])  # compression flag off
    for round_ in (0, 2**64):
        with pytest.raises(drand.DrandError, match="rounds start at 1"):
            drand.verify(QUICKNET_KEY, round_, ROUND_1000)


def test_the_contract_encoding_round_trips_the_compressed_points() -> None:
    g1 = drand.g1_for_contract(ROUND_1000)
    assert len(g1) == 128 and g1[:16] == g1[64:80] == bytes(16)
    g2 = drand.g2_for_contract(QUICKNET_KEY)
    assert len(g2) == 256 and all(g2[i : i + 16] == bytes(16) for i in range(0, 256, 64))


def test_round_clock() -> None:
    network = drand.Network(public_key=QUICKNET_KEY, genesis=1000, period=3)
    assert [network.round_at(t) for t in (0, 1000, 1001, 1003, 1004)] == [1, 1, 2, 2, 3]
    assert [network.round_time(r) for r in (1, 2, 3)] == [1000, 1003, 1006]
    assert [network.latest_round(t) for t in (999.9, 1000, 1002.9, 1003)] == [0, 1, 1, 2]


@pytest.fixture
def beacon_url() -> Iterator[tuple[str, drand.Network]]:
    network = devnet_network(genesis=int(time.time()) - 30)  # rounds 1 .. 11 published
    server = ThreadingHTTPServer(("127.0.0.1", 0), make_handler(network))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", network
    finally:
        server.shutdown()
        server.server_close()


def test_the_devnet_beacon_serves_drands_api_with_rounds_that_verify(beacon_url: tuple[str, drand.Network]) -> None:
    url, network = beacon_url
    info = httpx.get(f"{url}/info").json()
    assert info == chain_info(network)
    assert (info["schemeID"], info["period"], info["genesis_time"]) == (drand.SCHEME, 3, network.genesis)
    latest = httpx.get(f"{url}/public/latest").json()
    assert latest["round"] >= 11
    for body in (latest, httpx.get(f"{url}/{info['hash']}/public/5").json()):
        signature = bytes.fromhex(body["signature"])
        drand.verify(bytes.fromhex(info["public_key"]), body["round"], signature)
        assert bytes.fromhex(body["randomness"]) == drand.randomness(signature)
    future = httpx.get(f"{url}/public/{latest['round'] + 100}")
    assert future.status_code == 404 and "not published" in future.json()["error"]
    assert httpx.get(f"{url}/public/0").status_code == 404
    assert httpx.get(f"{url}/public/abc").status_code == 404


class _Hostile(BaseHTTPRequestHandler):
    """Relays that answer badly: by path, junk JSON, a null round, another round, a huge body, a trickle."""

    def do_GET(self) -> None:
        kind = self.path.split("/")[1]
        if kind == "trickle":
            self.send_response(200)
            self.end_headers()
            for _ in range(40):
                self.wfile.write(b" ")
                self.wfile.flush()
                time.sleep(0.1)
            return
        bodies = {
            "junk": b"not json",
            "null": json.dumps({"round": None, "signature": "00"}).encode(),
            "other": json.dumps({"round": 999, "signature": "ab" * 48}).encode(),
            "huge": b"{" + b" " * (1 << 20) + b"}",
        }
        self.send_response(200)
        self.end_headers()
        self.wfile.write(bodies.get(kind, b"{}"))

    def log_message(self, format: str, *args: object) -> None:
        pass


def test_hostile_relays_cost_a_bounded_time_and_never_raise(beacon_url: tuple[str, drand.Network]) -> None:
    url, network = beacon_url
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Hostile)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    hostile = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        kinds = ("junk", "null", "other", "huge", "down")
        relays = BeaconRelays((*(f"{hostile}/{kind}" for kind in kinds), "http://127.0.0.1:1", url))
        assert list(relays.signatures(1)) == [drand.sign(DEVNET_BEACON_SECRET, 1)]  # only the genuine relay's
        assert list(BeaconRelays((f"{hostile}/trickle", url), budget=1.0).signatures(1)) == []  # out of time
        assert list(BeaconRelays((url,)).signatures(network.latest_round(time.time()) + 100)) == []  # not yet
    finally:
        server.shutdown()
