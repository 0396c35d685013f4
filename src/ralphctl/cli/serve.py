"""``ralphctl serve``: the API, the live event stream and the dashboard, with the loop manager.

SIGTERM and SIGINT (Ctrl-C) shut it down cleanly: running loops are suspended (resumed by the
next server), the address file is removed, and the exit status is 0. Beside it, a deliverer
sends the notifications of every loop in the database (docs/notifications.md).
"""

from __future__ import annotations

import logging
import os
import signal
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from enum import StrEnum
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.markup import escape

from ralphctl.cli.common import UsageError, console, open_store

if TYPE_CHECKING:
    import uvicorn

    from ralphctl.server.locate import Address

log = logging.getLogger("ralphctl.serve")


class LogLevel(StrEnum):
    DEBUG = "debug"
    INFO = "info"
    WARNING = "warning"
    ERROR = "error"


def serve_command(
    host: str | None = typer.Option(
        None,
        "--host",
        help="Address to listen on (\\[server] host, default 127.0.0.1). Beyond loopback,"
        " anyone who has the token can start agents with your permissions.",
    ),
    port: int | None = typer.Option(
        None, "--port", help="Port (\\[server] port, default 8765; 0: any free one)."
    ),
    db: str | None = typer.Option(
        None, "--db", envvar="RALPHCTL_DB", help="Database URL or SQLite path."
    ),
    log_file: Path | None = typer.Option(
        None,
        "--log-file",
        help="Where to log, besides stderr (rotated at 10 MB, 5 kept; default: serve.log in"
        " the user log dir).",
    ),
    log_level: LogLevel = typer.Option(
        LogLevel.INFO, "--log-level", help="The least severe messages logged."
    ),
) -> None:
    """Serve the REST API, /ws/events and the dashboard; run and resume loops until Ctrl-C."""
    import uvicorn

    from ralphctl.engine.manager import LoopManager
    from ralphctl.notify.deliverer import FLUSH_S, Deliverer
    from ralphctl.server.app import UVICORN_OPTIONS, create_app
    from ralphctl.server.auth import InsecureBind, check_bind, is_loopback, load_or_create_token
    from ralphctl.server.locate import (
        TOKEN_FILE,
        Address,
        remove_address,
        server_dir,
    )
    from ralphctl.server.logsetup import LogFileError, configure_logging, default_log_file
    from ralphctl.settings import resolve_settings
    from ralphctl.store.url import mask

    log_file = log_file or default_log_file()
    try:
        configure_logging(log_level, log_file)
    except LogFileError as exc:
        raise UsageError(str(exc)) from None
    settings = resolve_settings()
    host = settings.server.host if host is None else host
    port = settings.server.port if port is None else port
    directory = server_dir()
    token = load_or_create_token(directory)
    try:
        check_bind(host, token)
    except InsecureBind as exc:
        raise UsageError(str(exc)) from None
    listener = _listen(host, port)
    url = _local_url(host, listener.getsockname()[1])
    store = open_store(db)
    app = create_app(store, LoopManager.from_settings(store, settings.loops), token)
    server = uvicorn.Server(uvicorn.Config(app, **UVICORN_OPTIONS, log_config=None))

    token_file = escape(str(directory / TOKEN_FILE))
    for line in (
        f"ralphctl server on [bold]{escape(url)}[/]  (database: {escape(mask(store.url))})",
        f"dashboard: [bold]{escape(url)}/#token={token}[/]",
        f"token:     {token}  (in {token_file})",
        f'API:       curl -H "Authorization: Bearer $(cat {token_file})" {url}/api/loops',
    ):
        console.print(line, soft_wrap=True)  # never wrapped: these are copied and pasted
    if not is_loopback(host):
        console.print(
            f"[yellow]warning:[/] listening on {host}: anyone who can reach it and has the token"
            " can start agents with your permissions; the traffic is not encrypted",
            soft_wrap=True,
        )
    console.print(f"log:       {escape(str(log_file))}", soft_wrap=True)
    notifier = Deliverer(partial(type(store).open, store.url)).start()
    try:
        with _stopped_by_signals(server):  # before the address: a SIGTERM then stops it cleanly
            _replace_address(directory, Address(url, os.getpid()))
            log.info("serving on %s (database: %s)", url, mask(store.url))
            server.run(sockets=[listener])
    finally:
        notifier.stop(flush_s=FLUSH_S)
        remove_address(directory, os.getpid())
        store.close()
        log.info("server stopped")


def _replace_address(directory: Path, address: Address) -> None:
    """Write the address file, saying what it replaces: a stale one, or a live server's."""
    from ralphctl.agents.process import pid_exists
    from ralphctl.server.locate import read_address, write_address

    previous = read_address(directory)
    if previous is not None and previous.pid != address.pid:
        if pid_exists(previous.pid):
            log.warning(
                "another server (pid %d, %s) uses %s: `ralphctl loops` now talks to this one",
                previous.pid,
                previous.url,
                directory,
            )
        else:
            log.info("replacing the address left by server pid %d, no longer running", previous.pid)
    write_address(directory, address)


@contextmanager
def _stopped_by_signals(server: uvicorn.Server) -> Iterator[None]:
    """SIGTERM and SIGINT ask the server to stop, and the process then returns normally.

    uvicorn handles both while it serves, then raises the signal it caught again, against the
    handlers it found: with the defaults, SIGTERM would kill the process (143) before its
    clean-up, and SIGINT raise KeyboardInterrupt. These handlers only ask it to stop (and log
    each signal once).
    """
    received: set[int] = set()

    def stop(signum: int, _frame: object) -> None:
        if signum not in received:
            received.add(signum)
            log.info("%s: shutting down", signal.Signals(signum).name)
        server.should_exit = True

    previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _listen(host: str, port: int) -> socket.socket:
    """Bind now, so that a busy port is a clear error and port 0 gets a known port."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        return socket.create_server((host.strip("[]"), port), family=family, reuse_port=False)
    except OSError as exc:
        raise UsageError(f"cannot listen on {host}:{port}: {exc.strerror}") from None


def _local_url(host: str, port: int) -> str:
    """The URL this machine reaches the server at (loopback for a wildcard address)."""
    if host in ("0.0.0.0", ""):
        host = "127.0.0.1"
    elif host in ("::", "[::]"):
        host = "[::1]"
    elif ":" in host and not host.startswith("["):
        host = f"[{host}]"
    return f"http://{host}:{port}"
