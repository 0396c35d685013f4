"""The runner's end of the hook socket: one Stop in, one answer out, per connection.

The protocol is ``ralphctl.hook.forwarder``'s. A request whose deadline has passed when it is
read gets no answer (the connection is closed): the hook has decided, or is about to decide,
locally, and one Stop must never be decided twice.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from types import TracebackType

from ralphctl.hook.forwarder import VERSION
from ralphctl.hook.handler import READ_LIMIT

#: A hook that connects and then stalls is dropped after this long.
READ_TIMEOUT_S = 5.0


class BadRequest(ValueError):
    """Not a request of our protocol."""


@dataclass(frozen=True, slots=True)
class StopRequest:
    """One forwarded Stop: the hook's arguments and session, its deadline, the raw input."""

    argv: list[str]
    session_id: str | None
    deadline: float  # time.monotonic()
    raw: bytes


@dataclass(frozen=True, slots=True)
class Reply:
    """The answer: decided (print ``line``, None: nothing) or not ours (decide locally).

    ``then`` runs once the answer is sent (e.g. recording the iteration).
    """

    decided: bool
    line: str | None = None
    then: Callable[[], None] | None = None

    def encode(self) -> bytes:
        body: dict[str, object] = {"v": VERSION, "decided": self.decided}
        if self.decided:
            body["line"] = self.line
        return json.dumps(body).encode()


#: Decides one Stop; runs in the event loop, so it must be quick.
Handler = Callable[[StopRequest], Reply]


def parse_request(header: bytes, raw: bytes) -> StopRequest:
    try:
        data = json.loads(header)
    except ValueError:
        raise BadRequest(f"not a JSON header: {header[:80]!r}") from None
    if not isinstance(data, dict) or data.get("v") != VERSION:
        raise BadRequest(f"not a version {VERSION} request: {header[:80]!r}")
    argv, session, deadline = data.get("argv"), data.get("session_id"), data.get("deadline")
    if not isinstance(argv, list) or not all(isinstance(arg, str) for arg in argv):
        raise BadRequest(f"argv must be a list of strings, not {argv!r}")
    if session is not None and not isinstance(session, str):
        raise BadRequest(f"session_id must be text, not {session!r}")
    if isinstance(deadline, bool) or not isinstance(deadline, int | float):
        raise BadRequest(f"deadline must be a number, not {deadline!r}")
    return StopRequest(argv, session, float(deadline), raw)


class StopServer:
    """Serves ``handler`` on a Unix socket at ``path`` while the context is open."""

    def __init__(self, path: str, handler: Handler, *, on_error: Callable[[str], None]) -> None:
        self.path = path
        self._handler = handler
        self._on_error = on_error
        self._server: asyncio.Server | None = None
        self._busy: set[asyncio.Task[object]] = set()

    async def __aenter__(self) -> StopServer:
        self._server = await asyncio.start_unix_server(self._client, path=self.path)
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        assert self._server is not None
        self._server.close()
        await self._server.wait_closed()

    async def settled(self) -> None:
        """Wait until every Stop received so far is answered and its ``then`` has run."""
        while self._busy:
            await asyncio.gather(*self._busy, return_exceptions=True)

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._busy.add(task)
        try:
            async with asyncio.timeout(READ_TIMEOUT_S):
                header = await reader.readline()
                raw = await _read_to_end(reader)
            request = parse_request(header, raw)
            if time.monotonic() > request.deadline:
                self._report("a Stop arrived after its deadline: the hook decides it alone")
                return
            reply = self._handler(request)
            try:
                writer.write(reply.encode())
                await writer.drain()
                writer.close()
            finally:  # decided is decided: recorded even if the hook went away meanwhile
                if reply.then is not None:
                    reply.then()
        except (BadRequest, OSError, TimeoutError, ValueError) as exc:
            self._report(f"a bad request on the hook socket: {exc}")
        finally:
            writer.close()
            with contextlib.suppress(OSError):
                await writer.wait_closed()
            if task is not None:
                self._busy.discard(task)

    def _report(self, message: str) -> None:
        with contextlib.suppress(Exception):  # reporting must not break the server
            self._on_error(message)


async def _read_to_end(reader: asyncio.StreamReader) -> bytes:
    """The Stop input: everything up to the hook's end of sending, within the hook's limit."""
    chunks: list[bytes] = []
    size = 0
    while chunk := await reader.read(65536):
        size += len(chunk)
        if size > READ_LIMIT:
            raise BadRequest(f"a Stop input larger than {READ_LIMIT} bytes")
        chunks.append(chunk)
    return b"".join(chunks)
