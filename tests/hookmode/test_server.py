"""The runner's socket: one forwarded Stop in, one answer out; late or bad requests get none."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path

import pytest

from ralphctl.engine.hookmode.server import Reply, StopRequest, StopServer
from ralphctl.hook.forwarder import Answer, ForwardError, forward
from tests.hook.helpers import SESSION, stop_event

BLOCK = json.dumps({"decision": "block", "reason": "Keep going."})


def exchange(
    path: Path, handler: Callable[[StopRequest], Reply], *, timeout: float = 2.0
) -> tuple[Answer | ForwardError, list[str]]:
    """Forward one Stop to a server running ``handler``: the hook's answer (or its error)
    and what the server reported."""
    problems: list[str] = []

    async def scenario() -> Answer | ForwardError:
        async with StopServer(str(path), handler, on_error=problems.append) as server:
            env = {"CLAUDE_CODE_SESSION_ID": SESSION}
            try:
                answer = await asyncio.to_thread(forward, str(path), stop_event(), [], env, timeout)
            except ForwardError as exc:
                return exc
            finally:
                await server.settled()
            return answer

    return asyncio.run(scenario()), problems


def test_the_handler_sees_the_stop_and_its_answer_reaches_the_hook(sockets):
    seen: list[StopRequest] = []
    done: list[str] = []

    def handler(request: StopRequest) -> Reply:
        seen.append(request)
        return Reply(True, BLOCK, then=lambda: done.append("recorded"))

    answer, problems = exchange(sockets / "stop.sock", handler)
    assert isinstance(answer, Answer)
    assert (answer.decided, answer.line) == (True, BLOCK)
    [request] = seen
    assert (request.raw, request.session_id, request.argv) == (stop_event(), SESSION, [])
    assert done == ["recorded"]
    assert problems == []


def test_not_the_runners_stop_is_said_so(sockets):
    answer, _ = exchange(sockets / "stop.sock", lambda request: Reply(False))
    assert isinstance(answer, Answer)
    assert answer.decided is False


def send(
    path: Path, header: bytes, handler: Callable[[StopRequest], Reply]
) -> tuple[bytes, list[str]]:
    """Send one hand-made request: what came back, and what the server reported."""
    problems: list[str] = []

    async def scenario() -> bytes:
        async with StopServer(str(path), handler, on_error=problems.append):
            reader, writer = await asyncio.open_unix_connection(str(path))
            writer.write(header + b"\n" + stop_event())
            writer.write_eof()
            answer = await reader.read()
            writer.close()
            return answer

    return asyncio.run(scenario()), problems


def test_a_stop_read_after_its_deadline_is_not_decided(sockets):
    decided: list[StopRequest] = []

    def handler(request: StopRequest) -> Reply:
        decided.append(request)
        return Reply(True, BLOCK)

    late = json.dumps({"v": 1, "argv": [], "session_id": SESSION, "deadline": 0.0}).encode()
    answer, problems = send(sockets / "stop.sock", late, handler)
    assert (answer, decided) == (b"", [])
    assert problems == ["a Stop arrived after its deadline: the hook decides it alone"]


@pytest.mark.parametrize(
    "header",
    [b"not json", b'{"v": 9}', b'{"v": 1, "argv": "stop", "deadline": 1}', b'{"v": 1, "argv": []}'],
)
def test_a_request_that_is_not_ours_gets_no_answer(sockets, header):
    answer, problems = send(sockets / "stop.sock", header, lambda request: Reply(True))
    assert answer == b""
    [problem] = problems
    assert problem.startswith("a bad request on the hook socket")
