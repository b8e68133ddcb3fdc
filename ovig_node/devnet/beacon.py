"""The devnet's drand beacon: signs each round on drand's schedule with a published devnet key and serves
them over drand's HTTP API, so the devnet's randomness goes through the same on-chain BLS verification
as drand's quicknet (protocol section 3).

Served, with or without the ``/{chain hash}`` prefix drand's relays also accept::

    GET /info             {"public_key", "period", "genesis_time", "hash", "schemeID", "metadata"}
    GET /public/latest    {"round", "randomness", "signature"}
    GET /public/{round}   the same for a round already published; 404 for a future one

Round r is published at ``genesis + (r - 1) * period``, by the devnet's clock: the wall clock, or the
chain's latest block time when that is ahead (tests move a devnet's time forward; the contracts name
rounds by block time, so a beacon on the wall clock would leave them waiting). A signature is a pure
function of the key and the round, so the beacon keeps no state and a restart serves the same rounds.

Run: ``python -m ovig_node.devnet.beacon --port 8090 --genesis 1700000000 --period 3 --rpc URL``
(``ovig devnet up`` does).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import time
import urllib.request
from collections.abc import Callable
from functools import lru_cache
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from py_ecc.optimized_bls12_381 import curve_order

from ovig_node.protocol.drand import SCHEME, Network, public_key_of, randomness, sign

# The devnet beacon's key, like anvil's test mnemonic a published value: never use it to secure anything.
DEVNET_BEACON_SECRET = (
    int.from_bytes(hashlib.sha256(b"ovig devnet drand beacon: a published test key").digest(), "big") % curve_order
)


def devnet_network(genesis: int, period: int = 3) -> Network:
    """The devnet beacon's network: its public key, genesis and period."""
    return Network(public_key=public_key_of(DEVNET_BEACON_SECRET), genesis=genesis, period=period)


def chain_info(network: Network) -> dict[str, Any]:
    """drand's ``/info`` for ``network``; the hash is sha256 of the key, period and genesis (the devnet's
    own convention: drand hashes its group file)."""
    material = network.public_key + network.period.to_bytes(4, "big") + network.genesis.to_bytes(8, "big")
    return {
        "public_key": network.public_key.hex(),
        "period": network.period,
        "genesis_time": network.genesis,
        "hash": hashlib.sha256(material).hexdigest(),
        "schemeID": SCHEME,
        "metadata": {"beaconID": "ovig-devnet"},
    }


@lru_cache(maxsize=4096)
def _signed(round_: int) -> bytes:
    return sign(DEVNET_BEACON_SECRET, round_)


def beacon_round(round_: int) -> dict[str, Any]:
    """drand's JSON for round ``round_`` of the devnet beacon."""
    signature = _signed(round_)
    return {"round": round_, "randomness": randomness(signature).hex(), "signature": signature.hex()}


def devnet_clock(rpc_url: str | None) -> Callable[[], float]:
    """The beacon's clock: the later of the wall clock and the chain's latest block time."""

    def now() -> float:
        wall = time.time()
        if rpc_url is None:
            return wall
        request = {"jsonrpc": "2.0", "id": 1, "method": "eth_getBlockByNumber", "params": ["latest", False]}
        try:
            call = urllib.request.Request(rpc_url, json.dumps(request).encode(), {"Content-Type": "application/json"})
            with urllib.request.urlopen(call, timeout=2) as response:
                block_time = int(json.loads(response.read())["result"]["timestamp"], 16)
        except (OSError, ValueError, KeyError, TypeError):
            return wall  # the chain is down or restarting: the wall clock never runs ahead of it
        return max(wall, block_time)

    return now


def make_handler(network: Network, clock: Callable[[], float] = time.time) -> type[BaseHTTPRequestHandler]:
    info = chain_info(network)
    route = re.compile(rf"^(?:/{info['hash']})?/(info|public/latest|public/(\d{{1,18}}))/?$")

    class Handler(BaseHTTPRequestHandler):
        timeout = 10  # seconds a client may take to send its request: a stalled one frees its thread

        def do_GET(self) -> None:
            match = route.match(self.path)
            if match is None:
                return self._send(404, {"error": "not found"})
            if match.group(1) == "info":
                return self._send(200, info)
            latest = network.latest_round(clock())
            wanted = latest if match.group(2) is None else int(match.group(2))
            if wanted < 1 or wanted > latest:
                return self._send(404, {"error": f"round {wanted} is not published (latest: {latest})"})
            return self._send(200, beacon_round(wanted))

        def _send(self, status: int, body: dict[str, Any]) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            pass  # a request per keeper poll: the log would say nothing useful

    return Handler


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="The devnet's drand beacon.")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--genesis", type=int, required=True, help="Unix time of round 1")
    parser.add_argument("--period", type=int, required=True, help="seconds between rounds")
    parser.add_argument("--rpc", help="the devnet chain's RPC URL: its block time moves the clock forward")
    args = parser.parse_args(argv)
    if args.period < 1 or args.genesis < 1:
        parser.error("--period and --genesis must be at least 1")
    network = devnet_network(args.genesis, args.period)
    server = ThreadingHTTPServer((args.host, args.port), make_handler(network, devnet_clock(args.rpc)))
    print(f"drand devnet beacon on http://{args.host}:{args.port}, genesis {args.genesis}, period {args.period}")
    server.serve_forever()


if __name__ == "__main__":
    main()
