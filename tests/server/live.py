"""A real uvicorn server in a thread, for clients that need a socket (browser, stdlib client)."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import uvicorn
from fastapi import FastAPI

from ralphctl.server.app import UVICORN_OPTIONS

START_TIMEOUT_S = 60.0


@contextmanager
def serving(app: FastAPI) -> Iterator[str]:
    """Serve ``app`` on a free loopback port until the block ends; yields its base URL."""
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, **UVICORN_OPTIONS))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [listener]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + START_TIMEOUT_S
    while not server.started:
        assert thread.is_alive(), "the server thread died while starting"
        assert time.monotonic() < deadline, "the server did not start"
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(START_TIMEOUT_S)
        listener.close()
