"""A local HTTP server imitating ``POST /v1/messages`` of the Anthropic API, from a script."""

from __future__ import annotations

import itertools
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

from tests.mockapi import wire
from tests.mockapi.recorded import RecordedRequest
from tests.mockapi.script import Script
from tests.mockapi.turns import Answer, ApiError, Turn

MESSAGES_PATH = "/v1/messages"
POLL_S = 0.02  # how often serve_forever checks for shutdown: stop() waits up to this long


class MockMessagesApi:
    """Serves the script on 127.0.0.1 (ephemeral port) until ``stop()``; use as a context
    manager or start/stop it yourself. Point the CLI at it with ``ANTHROPIC_BASE_URL``."""

    def __init__(self) -> None:
        self.script = Script()
        self._server = _Server(self.script)
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": POLL_S}, daemon=True
        )

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> MockMessagesApi:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()

    def __enter__(self) -> MockMessagesApi:
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


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False

    def __init__(self, script: Script) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.script = script
        self.side_ids = itertools.count(1)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    timeout = 30
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the test output is the CLI's, not ours."""

    def do_HEAD(self) -> None:
        self._record({})
        self._send(200, b"", "text/plain")

    def do_GET(self) -> None:
        self._record({})
        self._send_error(ApiError(404, "not_found_error", f"mock has no GET {self.path}"))

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length) or b"{}")
        if self.path.split("?", 1)[0] != MESSAGES_PATH:
            self._record(body)
            self._send_error(ApiError(404, "not_found_error", f"mock has no POST {self.path}"))
            return
        record, answer = self.server.script.answer(self._request(body))
        self._answer(record, answer)

    def _request(self, body: dict[str, Any]) -> RecordedRequest:
        return RecordedRequest(self.command, self.path, dict(self.headers.items()), body)

    def _record(self, body: dict[str, Any]) -> None:
        self.server.script.record(self._request(body))

    def _answer(self, record: RecordedRequest, answer: Answer) -> None:
        if isinstance(answer, ApiError):
            self._send_error(answer)
            return
        if record.turn is None:
            suffix = f"side_{next(self.server.side_ids):03d}"
        else:
            suffix = f"{record.turn:03d}"
        ids = {
            "message_id": f"msg_mock_{suffix}",
            "model": str(record.body.get("model", "claude-mock")),
            "tool_use_id": f"toolu_mock_{suffix}",
        }
        if record.body.get("stream"):
            payload = wire.encode_sse(wire.stream_events(answer, **ids))
            self._send(200, payload, "text/event-stream")
        else:
            payload = json.dumps(wire.message_json(answer, **ids)).encode()
            self._send(200, payload, "application/json")

    def _send_error(self, error: ApiError) -> None:
        payload = json.dumps(wire.error_json(error)).encode()
        self._send(error.status, payload, "application/json")

    def _send(self, status: int, payload: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(payload)))
        self.send_header("request-id", f"req_mock_{len(self.server.script.requests):04d}")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(payload)
