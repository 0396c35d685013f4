"""`ralphctl tell LOOP TEXT`: a message for a running loop's agent (through `ralphctl serve`
when it runs, else in the database itself).

The message goes into the agent's next prompt (fresh mode) or the next Stop's continue
message (same-session mode), exactly once; a loop waiting for an answer to its agent's
question takes it as the answer.
"""

from __future__ import annotations

import sys
from typing import Any

import typer
from rich.markup import escape

from ralphctl.cli.common import console, fail, open_store, print_json
from ralphctl.domain.states import EXIT_FAILED, EXIT_USAGE

LOOP_ID = typer.Argument(..., help="The loop's id (or a unique prefix).")
TEXT = typer.Argument(..., help="What to tell the agent; `-` reads it from stdin.")
DB = typer.Option(
    None, "--db", help="Act on this database directly, even when a server runs (env RALPHCTL_DB)."
)
JSON = typer.Option(False, "--json", help="Print the message as JSON.")


def tell_command(
    loop_id: str = LOOP_ID, text: str = TEXT, db: str | None = DB, json_out: bool = JSON
) -> None:
    """Tell a loop's agent something: it reads it in its next iteration (or answers its
    question)."""
    from ralphctl.engine.steering import default_sender

    if text == "-":
        text = sys.stdin.read()
    sender = default_sender()
    message = _through_server(loop_id, text, sender) if db is None else None
    if message is None:
        message = _here(loop_id, text, sender, db)
    if json_out:
        print_json(message)
    else:
        console.print(
            f"message {message['seq']} for loop [bold]{escape(message['loop_id'])}[/]: "
            "its agent reads it in its next iteration"
        )


def _here(loop_id: str, text: str, sender: str, db: str | None) -> dict[str, Any]:
    from ralphctl.domain.steering import InvalidMessage
    from ralphctl.engine.steering import SteeringRefused, tell

    store = open_store(db)
    try:
        loop = store.get_loop(loop_id)
        told = tell(store, loop, text, sender)
    except (InvalidMessage, SteeringRefused) as exc:
        fail(str(exc), EXIT_USAGE)
    finally:
        store.close()
    data = told.data
    at = told.timestamp.isoformat()
    return {"seq": told.seq, "loop_id": loop.id, "text": data["text"], "sender": sender, "at": at}


def _through_server(loop_id: str, text: str, sender: str) -> dict[str, Any] | None:
    """The message as the running server stored it; None when no server runs."""
    from ralphctl.server.client import ApiError, Client, ServerUnavailable

    client = Client.discover()
    if client is None:
        return None
    try:
        loop = client.get(f"/api/loops/{loop_id}")
        told: dict[str, Any] = client.post(
            f"/api/loops/{loop['id']}/messages", {"text": text, "sender": sender}
        )
    except ApiError as exc:
        fail(exc.detail, EXIT_USAGE if exc.status < 500 else EXIT_FAILED)
    except ServerUnavailable as exc:
        fail(f"{exc}; is `ralphctl serve` still running?", EXIT_FAILED)
    return told | {"loop_id": loop["id"]}
