"""The app factory: REST under ``/api``, ``/ws/events``, ``/metrics`` and the dashboard."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI

from ralphctl import __version__
from ralphctl.engine.manager import LoopManager
from ralphctl.server import ws
from ralphctl.server.api import (
    events,
    loops,
    messages,
    metrics,
    notifications,
    prometheus,
    system,
    transcripts,
)
from ralphctl.server.auth import RequireToken, TokenAuth
from ralphctl.server.dashboard import mount_dashboard
from ralphctl.server.errors import install_error_handlers
from ralphctl.server.openapi import declare_errors, publish
from ralphctl.store.repository import Store

#: How uvicorn serves the app. Event frames are small JSON: per-message compression would cost
#: CPU and a zlib context per client for nothing (measured: +15 % wall time, no lower latency).
UVICORN_OPTIONS: dict[str, Any] = {
    "ws_per_message_deflate": False,
    "log_level": "warning",
    "access_log": False,
}


def create_app(store: Store, manager: LoopManager, token: str) -> FastAPI:
    """An app serving ``store`` and controlling ``manager``, which it starts and closes.

    The manager runs on the server's event loop. (Measured: running it on a loop of its own in
    a thread doubled the p99 of event delivery, through GIL hand-offs; bench/server_events.py.)

    Every call but the dashboard's page and files and the OpenAPI description needs ``token``,
    checked before anything else. No CORS headers are sent, so other sites' pages cannot read
    the API from a browser.
    """

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        await manager.start()
        try:
            yield
        finally:
            await manager.close()

    app = FastAPI(
        title="ralphctl",
        version=__version__,
        summary="Run and watch autonomous coding agent loops.",
        lifespan=lifespan,
        redoc_url=None,
    )
    app.state.store = store
    app.state.manager = manager
    app.state.telemetry = prometheus.Telemetry(store)
    routers = (loops, messages, events, metrics, prometheus, system, transcripts, notifications)
    for module in routers:
        declare_errors(module.router)
        app.include_router(module.router)
    app.add_api_websocket_route("/ws/events", ws.events_socket)
    app.add_middleware(RequireToken, auth=TokenAuth(token))
    install_error_handlers(app)
    mount_dashboard(app)
    publish(app)
    return app
