"""The published OpenAPI description says what the server does: its errors and its security.

Every route in it needs the bearer token (``RequireToken``; the public page, its files and this
description are not in it), so the scheme is declared once, for every operation. Each route
declares the errors it can answer, all with one body (``ErrorBody``): its own (404, 409, 429)
where it is defined; the ones every route of a kind shares are added here: 401 everywhere, 422
with parameters or a body, 400 with a body, 503 when it reads or writes the database.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from fastapi import APIRouter, FastAPI
from fastapi.dependencies.models import Dependant
from fastapi.openapi.utils import get_openapi
from fastapi.routing import APIRoute

from ralphctl.server.api.deps import manager_of, store_of
from ralphctl.server.errors import error_responses

SCHEME = "bearerToken"
SECURITY_SCHEME = {
    "type": "http",
    "scheme": "bearer",
    "description": "The token `ralphctl serve` prints (stored in its `server-token` file).",
}
_DATABASE_USERS = (store_of, manager_of)


def declare_errors(router: APIRouter) -> None:
    """Add the errors every route of ``router`` answers by its kind to its declared ones."""
    for route in router.routes:
        if isinstance(route, APIRoute):
            route.responses = {**error_responses(*shared_errors(route)), **route.responses}


def publish(app: FastAPI) -> None:
    """Serve the description with the bearer scheme, required by every operation."""

    def described() -> dict[str, Any]:
        if app.openapi_schema is None:
            schema = get_openapi(
                title=app.title,
                version=app.version,
                summary=app.summary,
                routes=app.routes,
            )
            schema.setdefault("components", {})["securitySchemes"] = {SCHEME: SECURITY_SCHEME}
            schema["security"] = [{SCHEME: []}]
            app.openapi_schema = schema
        return app.openapi_schema

    app.openapi = described  # type: ignore[method-assign]


def shared_errors(route: APIRoute) -> list[int]:
    """The error statuses a route answers by its kind (its own are declared with it)."""
    dependant = route.dependant
    codes = [401]
    if dependant.body_params:
        codes.append(400)
    if dependant.body_params or dependant.query_params or dependant.path_params:
        codes.append(422)
    if any(call in _DATABASE_USERS for call in _calls(dependant)):
        codes.append(503)
    return codes


def _calls(dependant: Dependant) -> Iterator[Any]:
    for sub in dependant.dependencies:
        yield sub.call
        yield from _calls(sub)
