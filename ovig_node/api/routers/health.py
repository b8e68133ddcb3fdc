"""The service itself: indexer health against the chain head, and what the dashboard needs to know."""

from __future__ import annotations

import time

from fastapi import APIRouter

from ovig_node.api import models as m
from ovig_node.api.dependencies import State
from ovig_node.api.settings import ApiSettings

router = APIRouter(tags=["service"])
STALE_SECONDS = 10.0  # the indexer polls every second: this long without a poll is an outage


@router.get("/health", summary="Chain head, indexed block and lag, from the indexer's last poll")
async def health(state: State) -> m.Health:
    s = state.indexer.status
    age = None if s.polled_at is None else max(0.0, time.time() - s.polled_at)
    return m.Health(
        ok=s.error is None and age is not None and age < STALE_SECONDS,
        chain_id=s.chain_id,
        head_block=s.head,
        head_time=s.head_time,
        indexed_block=s.indexed,
        lag_blocks=s.lag,
        events=s.events,
        last_poll_seconds_ago=age,
        error=s.error,
    )


@router.get("/api/config", summary="Contracts, gateway and labels the dashboard uses")
async def config(state: State) -> m.Config:
    settings = state.settings
    return m.Config(
        chain_id=state.indexer.status.chain_id,
        contracts=settings.contracts,
        gateway=settings.gateway,
        reports=settings.ipfs_url is not None,
        labels=settings.labels,
        trusted=trusted_watchers(settings, state.names),
    )


def trusted_watchers(settings: ApiSettings, names: dict[str, str]) -> list[m.TrustedWatcher]:
    """The API's own watcher nodes first (in folder order), then the watchers only --trust-attester named."""
    return [m.TrustedWatcher(watcher=w, name=names.get(w), node=node) for w, node in settings.trusted_nodes()]
