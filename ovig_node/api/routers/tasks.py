"""Tasks: the list (filtered, paginated), one task with its batches, intervals, openings and timeline."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Query, Response

from ovig_node.api import models as m
from ovig_node.api import queries
from ovig_node.api.dependencies import (
    NOT_FOUND,
    AddressFilter,
    Limit,
    Offset,
    State,
    TaskId,
    checksum,
    json_page,
    not_found,
)

router = APIRouter(prefix="/api/tasks", tags=["tasks"], responses=NOT_FOUND)


@router.get("", summary="Tasks, newest first unless order=asc", response_model=m.Page[m.TaskSummary])
async def list_tasks(
    state: State,
    owner: AddressFilter = None,
    provider: AddressFilter = None,
    status: Annotated[m.TaskState | None, Query(description="only tasks in this state")] = None,  # type: ignore[valid-type]
    order: Literal["asc", "desc"] = "desc",
    limit: Limit = 50,
    offset: Offset = 0,
) -> Response:
    with state.store.snapshot() as db:
        page = queries.list_tasks(
            db,
            owner=checksum(owner),
            provider=checksum(provider),
            status=None if status is None else status.value,
            descending=order == "desc",
            limit=limit,
            offset=offset,
        )
    return json_page(page)


@router.get("/{task}", summary="One task: terms, batches (sample, opening manifest), disputes, payouts")
async def get_task(state: State, task: TaskId) -> m.TaskDetail:
    with state.store.snapshot() as db:
        found = queries.get_task(db, task)
    if found is None:
        raise not_found(f"task {task}")
    return found


@router.get("/{task}/intervals", summary="The task's intervals with their status (the dashboard's grid)")
async def task_intervals(
    state: State, task: TaskId, limit: Annotated[int, Query(ge=1, le=4096)] = 1024, offset: Offset = 0
) -> m.Page[m.Interval]:
    with state.store.snapshot() as db:
        found = queries.task_intervals(
            db, task, state.watchers, limit=limit, offset=offset, names=state.names, trusted=state.settings.trusted
        )
    if found is None:
        raise not_found(f"task {task}")
    return found


@router.get("/{task}/coverage", summary="How many opened intervals independent watchers attested sound, and who")
async def task_coverage(state: State, task: TaskId) -> m.Coverage:
    with state.store.snapshot() as db:
        found = queries.task_coverage(db, task, names=state.names, trusted=state.settings.trusted)
    if found is None:
        raise not_found(f"task {task}")
    return found


@router.get("/{task}/openings", summary="Opened intervals: start and end digests proven on-chain")
async def task_openings(state: State, task: TaskId) -> list[m.Opening]:
    with state.store.snapshot() as db:
        found = queries.task_openings(db, task)
    if found is None:
        raise not_found(f"task {task}")
    return found


@router.get("/{task}/timeline", summary="The task's events and windows in chain-time order")
async def task_timeline(state: State, task: TaskId) -> list[m.TimelineEntry]:
    with state.store.snapshot() as db:
        found = queries.task_timeline(
            db, task, names=state.names, head_time=state.indexer.status.head_time, trusted=state.settings.trusted
        )
    if found is None:
        raise not_found(f"task {task}")
    return found
