"""How amounts and addresses read in a line a person sees: the nodes' timeline, the API's, the demo."""

from __future__ import annotations

from typing import Any

ETH = 10**18


def eth(wei: Any) -> str:
    """An amount in wei as ETH, shortest form ("1.5 ETH")."""
    return f"{int(wei) / ETH:g} ETH"


def short(address: str, names: dict[str, str]) -> str:
    """An address by the name it goes by, or its first ten characters."""
    return names.get(address, address[:10] + "…")
