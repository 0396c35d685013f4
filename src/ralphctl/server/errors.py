"""Known failures as HTTP answers with a clear ``detail``: bad input is a 4xx, never a 500.

Every error answer has one shape, ``ErrorBody``; ``error_responses`` declares it in the
OpenAPI description for the statuses a route can answer.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from fastapi import FastAPI, Request, status
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field

from ralphctl.domain.states import IllegalTransition
from ralphctl.domain.steering import InvalidMessage
from ralphctl.engine.manager import (
    ConcurrencyLimitReached,
    InvalidSpec,
    LoopAlreadyExists,
    ManagerClosing,
    UnsupportedControl,
)
from ralphctl.engine.steering import SteeringRefused
from ralphctl.settings import ConfigError
from ralphctl.store.errors import LoopNotFound, StoreError

log = logging.getLogger(__name__)

UNPROCESSABLE = 422  # named HTTP_422_UNPROCESSABLE_ENTITY or _CONTENT, by Starlette version

Handler = Callable[[Request, Exception], Awaitable[JSONResponse]]

STATUS_OF: dict[type[Exception], int] = {
    LoopNotFound: status.HTTP_404_NOT_FOUND,
    IllegalTransition: status.HTTP_409_CONFLICT,
    LoopAlreadyExists: status.HTTP_409_CONFLICT,
    UnsupportedControl: status.HTTP_409_CONFLICT,
    ConfigError: UNPROCESSABLE,
    InvalidMessage: UNPROCESSABLE,
    SteeringRefused: status.HTTP_409_CONFLICT,
    InvalidSpec: UNPROCESSABLE,
    ConcurrencyLimitReached: status.HTTP_429_TOO_MANY_REQUESTS,
    StoreError: status.HTTP_503_SERVICE_UNAVAILABLE,  # the database, not the request
    ManagerClosing: status.HTTP_503_SERVICE_UNAVAILABLE,
}

#: What each error status means, as the OpenAPI description says it.
MEANING = {
    400: "The body could not be read (not UTF-8 JSON).",
    401: "The bearer token is missing or wrong.",
    404: "No loop has this id (or the prefix matches several).",
    409: "The loop's state does not allow this, or a loop is already active in the work dir.",
    422: "A parameter or the body is invalid; `errors` lists each problem.",
    429: "`max_concurrent` loops already run and the request asked not to queue.",
    503: "The database failed, or the server is shutting down; try again.",
}


class FieldError(BaseModel):
    """One invalid input: where it is, what is wrong, and pydantic's error type."""

    loc: list[str | int] = Field(description='Where, e.g. ["body", "config", "max_cost_usd"].')
    msg: str
    type: str


class ErrorBody(BaseModel):
    """Every error answer: one readable line, and for invalid input each problem."""

    detail: str = Field(description="What went wrong, for a person.")
    errors: list[FieldError] | None = Field(
        default=None, description="Invalid input only (422): each problem, structured."
    )


def error_responses(*codes: int) -> dict[int | str, dict[str, Any]]:
    """The OpenAPI ``responses`` of a route that can answer ``codes``, all as ``ErrorBody``."""
    return {code: {"model": ErrorBody, "description": MEANING[code]} for code in codes}


def install_error_handlers(app: FastAPI) -> None:
    for exc_type, code in STATUS_OF.items():
        app.add_exception_handler(exc_type, _answer(code))
    app.add_exception_handler(RequestValidationError, _invalid)


def _answer(code: int) -> Handler:
    async def handle(request: Request, exc: Exception) -> JSONResponse:
        if code >= 500:  # the server's trouble, not the caller's: the log keeps it
            log.error("%s %s answered %d: %s", request.method, request.url.path, code, exc)
        return JSONResponse({"detail": str(exc)}, status_code=code)

    return handle


async def _invalid(_request: Request, exc: Exception) -> JSONResponse:
    """One readable line (``workdir: must be an absolute path``) and the structured errors."""
    assert isinstance(exc, RequestValidationError)
    errors = [{"loc": list(e["loc"]), "msg": _message(e), "type": e["type"]} for e in exc.errors()]
    detail = "; ".join(f"{_where(e['loc'])}: {e['msg']}" for e in errors)
    return JSONResponse(
        {"detail": detail, "errors": errors},
        status_code=UNPROCESSABLE,
    )


def _message(error: dict[str, Any]) -> str:
    return str(error["msg"]).removeprefix("Value error, ")


def _where(loc: Sequence[str | int]) -> str:
    """``("body", "config", "max_cost_usd")`` -> ``config.max_cost_usd``."""
    parts = [str(p) for p in loc]
    if len(parts) > 1 and parts[0] in ("body", "query", "path"):
        parts = parts[1:]
    return ".".join(parts)
