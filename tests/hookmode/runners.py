"""Stand-ins for the ``--mode hook`` runner's socket: well-behaved, silent, or talking garbage."""

from __future__ import annotations

import contextlib
import json
import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

#: What a stand-in runner does with one connection: the request it read → the bytes to send
#: back (None: send nothing and keep the connection open until the test ends).
Behaviour = Callable[[dict[str, Any], bytes], bytes | None]


def answering(line: str | None) -> Behaviour:
    """A runner that decides: print ``line`` (None: nothing)."""
    return lambda header, raw: json.dumps({"v": 1, "decided": True, "line": line}).encode()


def not_ours() -> Behaviour:
    return lambda header, raw: b'{"v": 1, "decided": false}'


def silent() -> Behaviour:
    """A runner that accepts the connection and never answers."""
    return lambda header, raw: None


def saying(data: bytes) -> Behaviour:
    return lambda header, raw: data


class FakeRunner:
    """Serves one ``Behaviour`` on a Unix socket; ``requests`` holds what the hooks sent."""

    def __init__(self, path: Path, behaviour: Behaviour) -> None:
        self.path = path
        self.requests: list[tuple[dict[str, Any], bytes]] = []
        self._behaviour = behaviour
        self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._listener.bind(str(path))
        self._listener.listen()
        self._held: list[socket.socket] = []
        self._thread = threading.Thread(target=self._serve, daemon=True)

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self._listener.accept()
            except OSError:
                return  # closed: the test is over
            data = b""
            while chunk := conn.recv(65536):
                data += chunk
            head, _, raw = data.partition(b"\n")
            header = json.loads(head)
            self.requests.append((header, raw))
            reply = self._behaviour(header, raw)
            if reply is None:
                self._held.append(conn)
                continue
            conn.sendall(reply)
            conn.close()

    def start(self) -> None:
        self._thread.start()

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._listener.shutdown(socket.SHUT_RDWR)  # wakes the blocked accept()
        self._listener.close()
        for conn in self._held:
            conn.close()


@contextmanager
def fake_runner(path: Path, behaviour: Behaviour) -> Iterator[FakeRunner]:
    runner = FakeRunner(path, behaviour)
    runner.start()
    try:
        yield runner
    finally:
        runner.close()
