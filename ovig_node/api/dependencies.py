"""What the routers share: the app's state, and the parameters several endpoints take, with the bounds
that turn bad input into a 422 before any query runs."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import Depends, HTTPException, Path, Query, Request, Response
from pydantic import BaseModel
from web3 import Web3

from ovig_node.api.indexer import Indexer
from ovig_node.api.reports import Reports
from ovig_node.api.settings import ApiSettings
from ovig_node.api.store import Store
from ovig_node.api.watchers import WatcherVerdicts

ADDRESS = r"^0x[0-9a-fA-F]{40}$"
# Ids and offsets are bound to SQLite's 64-bit integers: larger ones are a 422, not an overflow.
MAX_ID = 2**63 - 1
MAX_OFFSET = 10**9


@dataclass
class ApiState:
    settings: ApiSettings
    store: Store
    indexer: Indexer
    reports: Reports
    watchers: WatcherVerdicts
    names: dict[str, str]  # address -> what timelines call it: the labels, and the two contracts


async def get_state(request: Request) -> ApiState:
    # async: a sync dependency would cost every request a hop through the thread pool.
    state: ApiState = request.app.state.ovig
    return state


class Problem(BaseModel):
    detail: str


State = Annotated[ApiState, Depends(get_state)]
Limit = Annotated[int, Query(ge=1, le=500, description="rows per page")]
Offset = Annotated[int, Query(ge=0, le=MAX_OFFSET, description="rows to skip")]
TaskId = Annotated[int, Path(ge=1, le=MAX_ID, description="task id (1 .. taskCount)")]
DisputeId = Annotated[int, Path(ge=1, le=MAX_ID, description="dispute id (1 .. disputeCount)")]
TaskFilter = Annotated[int | None, Query(ge=1, le=MAX_ID, description="only this task")]
AddressFilter = Annotated[str | None, Query(pattern=ADDRESS, description="an address, any case")]
NOT_FOUND: dict[int | str, dict[str, Any]] = {404: {"model": Problem, "description": "no such id"}}


def checksum(address: str | None) -> str | None:
    """The checksummed form events are stored with (filters accept any case)."""
    return None if address is None else Web3.to_checksum_address(address.lower())


def json_page(body: bytes) -> Response:
    """A page SQLite serialised (``queries._page``); the route's ``response_model`` documents its shape."""
    return Response(content=body, media_type="application/json")


def not_found(what: str) -> HTTPException:
    return HTTPException(status_code=404, detail=f"no {what}")
