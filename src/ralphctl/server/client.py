"""A small stdlib HTTP client for a running ``ralphctl serve``: what the CLI talks through.

``Client.discover()`` finds the server this user started (its address and token files in the
user config dir) and returns None when none answers, so the CLI can act on the database
directly instead.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ralphctl.server.locate import read_address, read_token, server_dir

PROBE_TIMEOUT_S = 2.0
# Loopback calls must never go through a proxy configured for the outside world.
_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


class ServerUnavailable(ConnectionError):
    """No server answers at the address."""


class ApiError(RuntimeError):
    """The server answered with an error; ``detail`` is its message."""

    def __init__(self, status: int, detail: str) -> None:
        super().__init__(f"{detail} (HTTP {status})")
        self.status = status
        self.detail = detail


@dataclass(frozen=True, slots=True)
class Client:
    base_url: str
    token: str
    timeout_s: float = 30.0

    @classmethod
    def discover(cls, directory: Path | None = None) -> Client | None:
        """The client of the server this user runs, or None when none is running."""
        directory = directory or server_dir()
        address, token = read_address(directory), read_token(directory)
        if address is None or token is None:
            return None
        client = cls(address.url, token)
        try:
            client.call("GET", "/api/health", timeout_s=PROBE_TIMEOUT_S)
        except ServerUnavailable:
            return None
        return client

    def get(self, path: str, **query: Any) -> Any:
        return self.call("GET", path, query=query)

    def post(self, path: str, body: Any = None, **query: Any) -> Any:
        return self.call("POST", path, body=body, query=query)

    def call(
        self,
        method: str,
        path: str,
        *,
        body: Any = None,
        query: dict[str, Any] | None = None,
        timeout_s: float | None = None,
    ) -> Any:
        """Send one request; the decoded JSON answer, ApiError or ServerUnavailable."""
        url = self.base_url.rstrip("/") + path
        params = {k: _param(v) for k, v in (query or {}).items() if v is not None}
        if params:
            url += "?" + urllib.parse.urlencode(params, doseq=True)
        request = urllib.request.Request(url, method=method)
        request.add_header("Authorization", f"Bearer {self.token}")
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            request.add_header("Content-Type", "application/json")
        try:
            with _OPENER.open(request, data, timeout=timeout_s or self.timeout_s) as response:
                return json.loads(response.read() or b"null")
        except urllib.error.HTTPError as exc:
            raise ApiError(exc.code, _detail(exc)) from None
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise ServerUnavailable(f"no server at {self.base_url} ({reason})") from None


def _param(value: Any) -> Any:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list | tuple):
        return [str(v) for v in value]
    return str(value)


def _detail(error: urllib.error.HTTPError) -> str:
    try:
        detail = json.loads(error.read()).get("detail")
    except (ValueError, AttributeError, OSError):
        detail = None
    return str(detail) if detail else str(error.reason)
