"""The hook's side of ``ralphctl run --mode hook``: hand the Stop to the runner, print its answer.

Imported only when ``RALPHCTL_HOOK_SOCKET`` names the runner's Unix socket. One exchange per
connection (protocol version 1):

- request: one JSON line ``{"v": 1, "argv": [...], "session_id": …, "deadline": …}``, then
  the Stop input's raw bytes; the hook then shuts its sending side. ``session_id`` is the
  hook's ``CLAUDE_CODE_SESSION_ID``; ``deadline`` is a ``time.monotonic()`` value (one clock
  for every process of the machine) after which the runner must not start deciding.
- answer: one JSON object, ``{"v": 1, "decided": true, "line": L}`` (print ``L``, a JSON
  object on one line, or nothing when ``L`` is null) or ``{"v": 1, "decided": false}``
  (not the runner's session: decide locally, as a standalone hook).

No socket, a refused or reset connection, a malformed answer or ``TIMEOUT_S`` of silence is a
``ForwardError``: the hook then decides locally from the tracker. The runner gives up on a
request at half the timeout, so the two never both decide one Stop.
"""

from __future__ import annotations

import json
import socket
import time

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping

VERSION = 1
#: How long the hook waits for the runner, connection included.
TIMEOUT_S = 2.0
MAX_ANSWER_BYTES = 1024 * 1024


class ForwardError(Exception):
    """The runner did not answer usefully; the hook decides locally."""


class Answer:
    """The runner's answer: ``decided`` with the ``line`` to print (None: print nothing)."""

    __slots__ = ("decided", "line")

    def __init__(self, decided: bool, line: str | None = None) -> None:
        self.decided = decided
        self.line = line

    def __repr__(self) -> str:
        return f"Answer({self.decided!r}, {self.line!r})"


def forward(
    path: str, raw: bytes, argv: list[str], env: Mapping[str, str], timeout: float | None = None
) -> Answer:
    """Send one Stop to the runner listening at ``path``; raises ForwardError without an answer."""
    limit = TIMEOUT_S if timeout is None else timeout
    started = time.monotonic()
    header = {
        "v": VERSION,
        "argv": argv,
        "session_id": env.get("CLAUDE_CODE_SESSION_ID"),
        "deadline": started + limit / 2,
    }
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(limit)
            sock.connect(path)
            sock.sendall(json.dumps(header).encode() + b"\n" + raw)
            sock.shutdown(socket.SHUT_WR)
            data = _receive(sock, started + limit)
    except TimeoutError:
        raise ForwardError(f"no answer within {limit:g} s") from None
    except OSError as exc:
        raise ForwardError(f"{path}: {exc.strerror or exc}") from None
    return parse_answer(data)


def _receive(sock: socket.socket, deadline: float) -> bytes:
    """Everything the runner sends until it closes, by ``deadline`` at the latest."""
    chunks: list[bytes] = []
    size = 0
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError
        sock.settimeout(left)
        chunk = sock.recv(65536)
        if not chunk:
            return b"".join(chunks)
        size += len(chunk)
        if size > MAX_ANSWER_BYTES:
            raise ForwardError(f"an answer larger than {MAX_ANSWER_BYTES} bytes")
        chunks.append(chunk)


def parse_answer(data: bytes) -> Answer:
    """The runner's answer, checked so that nothing but one JSON object is ever printed."""
    if not data.strip():
        raise ForwardError("the runner closed the connection without answering")
    try:
        answer = json.loads(data)
    except ValueError:
        raise ForwardError(f"not a JSON answer: {data[:80]!r}") from None
    if not isinstance(answer, dict) or answer.get("v") != VERSION:
        raise ForwardError(f"not a version {VERSION} answer: {data[:80]!r}")
    decided, line = answer.get("decided"), answer.get("line")
    if decided is False:
        return Answer(False)
    if decided is not True or "line" not in answer or not (line is None or _one_object(line)):
        raise ForwardError(f"a malformed answer: {data[:80]!r}")
    return Answer(True, line)


def _one_object(line: object) -> bool:
    if not isinstance(line, str) or "\n" in line or not line.startswith("{"):
        return False
    try:
        return isinstance(json.loads(line), dict)
    except ValueError:
        return False
