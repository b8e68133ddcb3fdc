"""Money and stakes: payouts (every Credited event), credits still to withdraw, auditors."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Response

from ovig_node.api import models as m
from ovig_node.api import queries
from ovig_node.api.dependencies import (
    ADDRESS,
    NOT_FOUND,
    AddressFilter,
    Limit,
    Offset,
    State,
    TaskFilter,
    checksum,
    json_page,
    not_found,
)

router = APIRouter(prefix="/api", tags=["accounts"])


@router.get("/payouts", summary="Credits paid out by both contracts, in chain order", response_model=m.Page[m.Payout])
async def list_payouts(
    state: State, account: AddressFilter = None, task: TaskFilter = None, limit: Limit = 50, offset: Offset = 0
) -> Response:
    with state.store.snapshot() as db:
        return json_page(queries.list_payouts(db, account=checksum(account), task=task, limit=limit, offset=offset))


@router.get("/credits", summary="Per account and contract: credited, withdrawn, and still to withdraw")
async def list_credits(state: State, account: AddressFilter = None) -> list[m.Credit]:
    with state.store.snapshot() as db:
        return queries.list_credits(db, account=checksum(account))


@router.get("/auditors", summary="Auditors: stake, locked stake, registration, exit")
async def list_auditors(state: State) -> list[m.Auditor]:
    with state.store.snapshot() as db:
        return queries.list_auditors(db)


@router.get("/auditors/{address}", summary="One auditor", responses=NOT_FOUND)
async def get_auditor(state: State, address: Annotated[str, Path(pattern=ADDRESS)]) -> m.Auditor:
    with state.store.snapshot() as db:
        found = queries.list_auditors(db, address=checksum(address))
    if not found:
        raise not_found(f"auditor {address}")
    return found[0]
