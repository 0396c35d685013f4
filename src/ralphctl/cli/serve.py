"""``ralphctl serve``: the API, the live event stream and the dashboard, with the loop manager."""

from __future__ import annotations

import logging
import os
import socket

import typer
from rich.markup import escape

from ralphctl.cli.common import UsageError, console, open_store


def serve_command(
    host: str | None = typer.Option(
        None,
        "--host",
        help="Address to listen on ([server] host, default 127.0.0.1). Beyond loopback,"
        " anyone who has the token can start agents with your permissions.",
    ),
    port: int | None = typer.Option(
        None, "--port", help="Port ([server] port, default 8765; 0: any free one)."
    ),
    db: str | None = typer.Option(
        None, "--db", envvar="RALPHCTL_DB", help="Database URL or SQLite path."
    ),
) -> None:
    """Serve the REST API, /ws/events and the dashboard; run and resume loops until Ctrl-C."""
    import uvicorn

    from ralphctl.engine.manager import LoopManager
    from ralphctl.server.app import UVICORN_OPTIONS, create_app
    from ralphctl.server.auth import (
        InsecureBind,
        RedactTokens,
        check_bind,
        is_loopback,
        load_or_create_token,
    )
    from ralphctl.server.locate import (
        TOKEN_FILE,
        Address,
        remove_address,
        server_dir,
        write_address,
    )
    from ralphctl.settings import resolve_settings
    from ralphctl.store.url import mask

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
    server = uvicorn.Server(uvicorn.Config(app, **UVICORN_OPTIONS))
    for name in ("uvicorn.error", "uvicorn.access"):  # after Config, which sets logging up
        logging.getLogger(name).addFilter(RedactTokens())

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
    write_address(directory, Address(url, os.getpid()))
    try:
        server.run(sockets=[listener])
    finally:
        remove_address(directory, os.getpid())
        store.close()


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
