"""The turn counter: which answer each request gets, and the record of every request."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from typing import Any

from tests.mockapi.recorded import RecordedRequest
from tests.mockapi.turns import EXHAUSTED, NO_USAGE, Answer, ApiError, Reply, Responder, Turn

SIDE_REPLY = Reply("(side request)", usage=NO_USAGE)


class Script:
    """Answers main requests (``is_main``) with the scripted turns in order, across any number
    of agent processes; once they run out, answers ``EXHAUSTED`` and marks the record. Other
    requests get ``side_answer`` and consume no turn."""

    def __init__(self, is_main: Callable[[Mapping[str, Any]], bool]) -> None:
        self._is_main = is_main
        self._lock = threading.Lock()
        self._turns: list[Turn] = []
        self._position = 0
        self._requests: list[RecordedRequest] = []
        self.side_answer: Answer = SIDE_REPLY

    def load(self, turns: Iterable[Turn]) -> None:
        """Replace the script and start again from its first turn (keeps the request log)."""
        with self._lock:
            self._turns = list(turns)
            self._position = 0

    def record(self, request: RecordedRequest) -> None:
        """Log a request that is not a Messages call (it gets no scripted answer)."""
        with self._lock:
            self._requests.append(request)

    def answer(self, request: RecordedRequest) -> tuple[RecordedRequest, Answer]:
        """Record a Messages request and pick its answer; returns the record as stored."""
        with self._lock:
            turn: Turn = self.side_answer
            if self._is_main(request.body):
                index = self._position
                self._position += 1
                exhausted = index >= len(self._turns)
                turn = EXHAUSTED if exhausted else self._turns[index]
                request = replace(request, turn=index, exhausted=exhausted)
            self._requests.append(request)
        return request, turn if isinstance(turn, Answer) else _call(turn, request)

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._requests)

    @property
    def turns_used(self) -> int:
        with self._lock:
            return min(self._position, len(self._turns))


def _call(responder: Responder, request: RecordedRequest) -> Answer:
    """A failing responder becomes a 500 whose message the CLI prints as its result."""
    try:
        return responder(request)
    except Exception as error:  # any bug in a test responder must reach the test output
        return ApiError(500, "api_error", f"mock responder failed: {error!r}")
