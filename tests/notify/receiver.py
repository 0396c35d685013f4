"""A local webhook receiver (``http.server`` on a thread) that answers as scripted."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class Received:
    body: bytes
    headers: dict[str, str]


@dataclass
class Receiver:
    """``answers``: one per request in order, then the last one again; an int is the HTTP
    status, a float the seconds to sleep before answering 200 (to outlast a timeout)."""

    answers: list[int | float]
    url: str = ""
    received: list[Received] = field(default_factory=list)  # every request, failed ones too
    accepted: list[Received] = field(default_factory=list)  # those answered 2xx
    lock: threading.Lock = field(default_factory=threading.Lock)

    def next_answer(self) -> int | float:
        with self.lock:
            index = min(len(self.received), len(self.answers) - 1)
            return self.answers[index]


@contextmanager
def receiver(*answers: int | float) -> Iterator[Receiver]:
    state = Receiver(list(answers) or [200])

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            answer = state.next_answer()
            got = Received(body, dict(self.headers.items()))
            with state.lock:
                state.received.append(got)
            status = answer if isinstance(answer, int) else 200
            if isinstance(answer, float):
                time.sleep(answer)
            try:
                self.send_response(status)
                self.end_headers()
                self.wfile.write(b"ok")
            except OSError:  # the client gave up (its timeout)
                return
            if 200 <= status < 300 and isinstance(answer, int):
                with state.lock:
                    state.accepted.append(got)

        def log_message(self, *_args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    state.url = f"http://127.0.0.1:{server.server_address[1]}/hook"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
