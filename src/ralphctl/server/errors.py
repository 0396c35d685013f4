"""Known failures as HTTP answers with a clear ``detail``: bad input is a 4xx, never a 500."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from fastapi import FastAPI, Request, status
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse

from ralphctl.domain.states import IllegalTransition
from ralphctl.engine.manager import (
    ConcurrencyLimitReached,
    InvalidSpec,
    LoopAlreadyExists,
    UnsupportedControl,
)
from ralphctl.settings import ConfigError
from ralphctl.store.errors import LoopNotFound, StoreError

UNPROCESSABLE = 422  # named HTTP_422_UNPROCESSABLE_ENTITY or _CONTENT, by Starlette version

Handler = Callable[[Request, Exception], Awaitable[JSONResponse]]

STATUS_OF: dict[type[Exception], int] = {
    LoopNotFound: status.HTTP_404_NOT_FOUND,
    IllegalTransition: status.HTTP_409_CONFLICT,
    LoopAlreadyExists: status.HTTP_409_CONFLICT,
    UnsupportedControl: status.HTTP_409_CONFLICT,
    ConfigError: UNPROCESSABLE,
    InvalidSpec: UNPROCESSABLE,
    ConcurrencyLimitReached: status.HTTP_429_TOO_MANY_REQUESTS,
    StoreError: status.HTTP_503_SERVICE_UNAVAILABLE,  # the database, not the request
}


def install_error_handlers(app: FastAPI) -> None:
    for exc_type, code in STATUS_OF.items():
        app.add_exception_handler(exc_type, _answer(code))
    app.add_exception_handler(RequestValidationError, _invalid)


def _answer(code: int) -> Handler:
    async def handle(_request: Request, exc: Exception) -> JSONResponse:
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
