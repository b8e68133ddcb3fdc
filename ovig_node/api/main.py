"""The app: routers, the dashboard's static files, and the indexer's lifecycle. Wiring only."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from fastapi import FastAPI
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles

from ovig_node.api.dashboard import index_html
from ovig_node.api.dependencies import ApiState
from ovig_node.api.indexer import Indexer
from ovig_node.api.reports import Reports
from ovig_node.api.routers import accounts, disputes, health, tasks
from ovig_node.api.settings import ApiSettings
from ovig_node.api.store import Store
from ovig_node.api.watchers import WatcherVerdicts

STATIC = Path(__file__).parent / "static"


def create_app(settings: ApiSettings) -> FastAPI:
    """The API over ``settings``; the indexer runs while the app does (or from ``state.indexer.start()``)."""
    store = Store(settings.home / "api.sqlite")
    names = {**{address: name for name, address in settings.contracts.items()}, **settings.labels}
    state = ApiState(
        settings=settings,
        store=store,
        indexer=Indexer(settings, store),
        reports=Reports(settings.ipfs_url),
        watchers=WatcherVerdicts(settings.watcher_homes),
        names=names,
    )

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        state.indexer.start()
        yield
        state.indexer.stop()

    app = FastAPI(
        title="OVIG owner API",
        summary="Tasks, batches, samples, openings, disputes, votes and payouts, indexed from contract events.",
        version="1",
        lifespan=lifespan,
    )
    app.state.ovig = state
    for module in (tasks, disputes, accounts, health):
        app.include_router(module.router)
    app.mount("/static", StaticFiles(directory=STATIC), name="static")

    @app.get("/", include_in_schema=False)
    async def dashboard() -> HTMLResponse:
        # The task list rendered in: content before (or without) the script (ovig_node.api.dashboard).
        return HTMLResponse(index_html(state))

    return app
