"""The dashboard: one page and its static files, served from the package (no CDN)."""

from __future__ import annotations

from pathlib import Path

from fastapi import FastAPI
from fastapi.responses import FileResponse
from fastapi.staticfiles import StaticFiles

STATIC = Path(__file__).parent / "static"

#: The page runs only its own scripts and talks only to this server; nothing may frame it.
PAGE_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:;"
        " connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"
    ),
    "Referrer-Policy": "no-referrer",
    "X-Content-Type-Options": "nosniff",
    "Cache-Control": "no-cache",
}


def mount_dashboard(app: FastAPI) -> None:
    """``/`` is the page (its views are routed by the URL fragment); ``/static/`` its files.

    Neither needs the token: they hold no data. The page reads the token from the URL
    fragment ``#token=…`` (never sent to the server) and sends it with every call.
    """
    app.mount("/static", StaticFiles(directory=STATIC), name="static")

    @app.get("/", include_in_schema=False)
    def page() -> FileResponse:
        return FileResponse(STATIC / "index.html", headers=PAGE_HEADERS)
