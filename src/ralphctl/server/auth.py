"""The bearer token: made on first start, kept in a 0600 file, required on every API call.

HTTP calls send ``Authorization: Bearer <token>``; WebSocket calls may send the header or
``?token=`` (browsers cannot set headers on a WebSocket). Tokens are compared in constant time.
``RequireToken`` checks it before routing, so a call without it learns nothing else (not even
whether its body or parameters were valid): 401, or a WebSocket closed with 1008.
"""

from __future__ import annotations

import hmac
import ipaddress
import logging
import re
import secrets
from pathlib import Path

from starlette.requests import HTTPConnection
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send
from starlette.websockets import WebSocketClose

from ralphctl.server.locate import TOKEN_FILE, read_token, write_private

_TOKEN_BYTES = 32
_QUERY_TOKEN = re.compile(r"([?&]token=)[^&\s\"]*")

#: What anyone may fetch: the dashboard's page and files, and the API's description.
PUBLIC_PATHS = frozenset({"/", "/openapi.json", "/docs", "/docs/oauth2-redirect"})
PUBLIC_PREFIX = "/static/"
POLICY_VIOLATION = 1008


class InsecureBind(RuntimeError):
    """The server was asked to run without a token."""


def load_or_create_token(directory: Path) -> str:
    """The token stored in ``directory``; a new random one, written with mode 0600, if none is."""
    token = read_token(directory)
    if token:
        return token
    token = secrets.token_urlsafe(_TOKEN_BYTES)
    write_private(directory / TOKEN_FILE, token + "\n")
    return token


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # a host name: it may resolve to anything


def check_bind(host: str, token: str) -> None:
    """Refuse to serve without a token; beyond this machine, say what is at stake."""
    if token.strip():
        return
    if is_loopback(host):
        raise InsecureBind("refusing to start the server with an empty token")
    raise InsecureBind(
        f"refusing to listen on {host} without a token: anyone who can reach it could start"
        " agents with your permissions"
    )


class TokenAuth:
    """Admits a connection only with the right bearer token."""

    def __init__(self, token: str) -> None:
        check_bind("127.0.0.1", token)
        self._token = token.encode()

    def problem(self, connection: HTTPConnection, *, allow_query: bool) -> str | None:
        """Why ``connection`` is not admitted, or None when it is."""
        offered = _bearer(connection.headers.get("authorization"))
        if offered is None and allow_query:
            offered = connection.query_params.get("token")
        if not offered:
            where = " (or ?token=)" if allow_query else ""
            return (
                f"missing token: send Authorization: Bearer <token>{where};"
                " `ralphctl serve` prints it"
            )
        if not hmac.compare_digest(offered.encode(), self._token):
            return "invalid token"
        return None


class RequireToken:
    """ASGI middleware: every call but the public paths needs the token, checked first."""

    def __init__(self, app: ASGIApp, auth: TokenAuth) -> None:
        self.app = app
        self.auth = auth

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind in ("http", "websocket") and not is_public(scope["path"]):
            problem = self.auth.problem(HTTPConnection(scope), allow_query=kind == "websocket")
            if problem:
                refusal = (
                    WebSocketClose(POLICY_VIOLATION)
                    if kind == "websocket"
                    else JSONResponse(
                        {"detail": problem}, 401, headers={"WWW-Authenticate": "Bearer"}
                    )
                )
                await refusal(scope, receive, send)
                return
        await self.app(scope, receive, send)


def is_public(path: str) -> bool:
    return path in PUBLIC_PATHS or path.startswith(PUBLIC_PREFIX)


class RedactTokens(logging.Filter):
    """Blanks ``token=`` query values in log records (uvicorn logs WebSocket paths in full)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.args, tuple):
            record.args = tuple(
                _QUERY_TOKEN.sub(r"\1***", arg) if isinstance(arg, str) else arg
                for arg in record.args
            )
        return True


def _bearer(header: str | None) -> str | None:
    if header is None:
        return None
    scheme, _, value = header.partition(" ")
    return value.strip() if scheme.lower() == "bearer" else None
