"""Disputes: the list, one dispute with its panels and votes, and the challenger's replay report."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, HTTPException, Query, Response
from pydantic import ValidationError

from ovig_node.api import models as m
from ovig_node.api import queries
from ovig_node.api.dependencies import (
    NOT_FOUND,
    DisputeId,
    Limit,
    Offset,
    Problem,
    State,
    TaskFilter,
    json_page,
    not_found,
)
from ovig_node.api.reports import ReportFetchFailed, ReportNotFound, ReportUnreadable

router = APIRouter(prefix="/api/disputes", tags=["disputes"], responses=NOT_FOUND)


@router.get("", summary="Disputes, oldest first", response_model=m.Page[m.DisputeSummary])
async def list_disputes(
    state: State,
    task: TaskFilter = None,
    status: Annotated[m.DisputeState | None, Query(description="only disputes in this state")] = None,  # type: ignore[valid-type]
    limit: Limit = 50,
    offset: Offset = 0,
) -> Response:
    status_name = None if status is None else status.value
    with state.store.snapshot() as db:
        return json_page(queries.list_disputes(db, task=task, status=status_name, limit=limit, offset=offset))


@router.get("/{dispute}", summary="One dispute: challenger, report CID, each round's panel and votes, payouts")
async def get_dispute(state: State, dispute: DisputeId) -> m.DisputeDetail:
    with state.store.snapshot() as db:
        found = queries.get_dispute(db, dispute)
    if found is None:
        raise not_found(f"dispute {dispute}")
    return found


@router.get(
    "/{dispute}/report",
    summary="The challenger's replay report, fetched from IPFS by its CID and hash-checked",
    responses={
        502: {"model": Problem, "description": "the CID holds no readable report"},
        503: {"model": Problem, "description": "the IPFS node does not answer"},
    },
)
def dispute_report(state: State, dispute: DisputeId) -> m.Report:
    with state.store.snapshot() as db:
        found = queries.get_dispute(db, dispute)
    if found is None:
        raise not_found(f"dispute {dispute}")
    if not found.report_cid:
        raise not_found(f"report for dispute {dispute}")
    try:
        return m.Report.model_validate(state.reports.get(found.report_cid))
    except ReportNotFound as exc:
        raise HTTPException(404, str(exc)) from None
    except ReportFetchFailed as exc:
        raise HTTPException(503, str(exc)) from None
    except (ReportUnreadable, ValidationError) as exc:
        # The challenger chose the CID: whatever it points at is its problem, shown as a bad upstream.
        raise HTTPException(502, f"report {found.report_cid}: {str(exc).splitlines()[0]}") from None
