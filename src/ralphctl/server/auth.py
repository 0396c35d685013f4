"""The bearer token: made on first start, kept in a 0600 file, required on every API call.

HTTP calls send ``Authorization: Bearer <token>``; WebSocket calls may send the header or
``?token=`` (browsers cannot set headers on a WebSocket). Tokens are compared in constant time.
"""

from __future__ import annotations

import hmac
import ipaddress
import logging
import re
import secrets
from pathlib import Path

from fastapi import HTTPException, status
from starlette.requests import HTTPConnection

from ralphctl.server.locate import TOKEN_FILE, read_token, write_private

_TOKEN_BYTES = 32
_QUERY_TOKEN = re.compile(r"([?&]token=)[^&\s\"]*")


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
    """A FastAPI dependency that admits a connection only with the right bearer token."""

    def __init__(self, token: str) -> None:
        check_bind("127.0.0.1", token)
        self._token = token.encode()

    def __call__(self, connection: HTTPConnection) -> None:
        problem = self.problem(connection, allow_query=False)
        if problem:
            raise HTTPException(
                status.HTTP_401_UNAUTHORIZED, problem, headers={"WWW-Authenticate": "Bearer"}
            )

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
