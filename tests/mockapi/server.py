"""A local HTTP server imitating a model provider's API from a script: ``MockApi`` serves
any ``Provider``; ``MockMessagesApi`` is the Anthropic Messages API (``POST /v1/messages``)."""

from __future__ import annotations

import itertools
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Self

from tests.mockapi.anthropic import AnthropicMessages
from tests.mockapi.provider import Payload, Provider
from tests.mockapi.recorded import RecordedRequest
from tests.mockapi.script import Script
from tests.mockapi.turns import Answer, ApiError, Turn

POLL_S = 0.02  # how often serve_forever checks for shutdown: stop() waits up to this long


class MockApi:
    """Serves the script on 127.0.0.1 (ephemeral port) in ``provider``'s wire format until
    ``stop()``; use as a context manager or start/stop it yourself."""

    def __init__(self, provider: Provider) -> None:
        self.provider = provider
        self.script = Script(provider.is_main_request)
        self._server = _Server(self.script, provider)
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": POLL_S}, daemon=True
        )

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> Self:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()

    def set_script(self, *turns: Turn) -> None:
        """Replace the script; the next main request gets the first of these turns."""
        self.script.load(turns)

    @property
    def requests(self) -> list[RecordedRequest]:
        """Every request received so far, in arrival order."""
        return self.script.requests

    @property
    def main_requests(self) -> list[RecordedRequest]:
        """The requests that consumed a script turn (including exhausted ones)."""
        return [r for r in self.requests if r.scripted]

    @property
    def side_requests(self) -> list[RecordedRequest]:
        return [r for r in self.requests if not r.scripted]

    @property
    def exhausted_requests(self) -> list[RecordedRequest]:
        """Main requests that arrived after the script ran out."""
        return [r for r in self.requests if r.exhausted]


class MockMessagesApi(MockApi):
    """The Anthropic Messages API; point Claude Code at it with ``ANTHROPIC_BASE_URL``."""

    def __init__(self) -> None:
        super().__init__(AnthropicMessages())


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False

    def __init__(self, script: Script, provider: Provider) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.script = script
        self.provider = provider
        self.side_ids = itertools.count(1)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    timeout = 30
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the test output is the CLI's, not ours."""

    def do_HEAD(self) -> None:
        self._handle()

    def do_GET(self) -> None:
        self._handle()

    def do_POST(self) -> None:
        self._handle()

    def _handle(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = {"_raw": raw.decode("utf-8", "replace")}
        request = RecordedRequest(self.command, self.path, dict(self.headers.items()), body)
        provider = self.server.provider
        if not provider.is_api_call(self.command, self.path):
            self.server.script.record(request)
            self._send(provider.other(self.command, self.path))
            return
        record, answer = self.server.script.answer(request)
        self._send(self._payload(record, answer))

    def _payload(self, record: RecordedRequest, answer: Answer) -> Payload:
        provider = self.server.provider
        if isinstance(answer, ApiError):
            return provider.error(answer)
        if record.turn is None:
            suffix = f"side_{next(self.server.side_ids):03d}"
        else:
            suffix = f"{record.turn:03d}"
        return provider.answer(record, answer, suffix)

    def _send(self, payload: Payload) -> None:
        self.send_response(payload.status)
        self.send_header("Content-Type", payload.content_type)
        self.send_header("Content-Length", str(len(payload.body)))
        self.send_header("request-id", f"req_mock_{len(self.server.script.requests):04d}")
        for name, value in (payload.headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(payload.body)
