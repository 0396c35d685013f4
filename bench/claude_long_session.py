"""A long Claude Code session in its stream-json format, for the parser throughput benchmark.

Init, per-block assistant lines with text and tool_use, user tool_result lines carrying whole
source files twice as the real CLI does (Read), written files (Write) and test output (Bash),
rate-limit events and the result line.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

import orjson

from long_sessions import numbered

SESSION = "0f1e2d3c-4b5a-4697-8877-665544332211"


def usage(rng: random.Random) -> dict[str, int]:
    return {
        "input_tokens": rng.randint(1, 5000),
        "cache_creation_input_tokens": rng.randint(0, 9000),
        "cache_read_input_tokens": rng.randint(0, 90000),
        "output_tokens": rng.randint(1, 900),
    }


def assistant(message_id: str, block: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    message = {
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "model": "claude-opus-5-5",
        "content": [block],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": usage(rng),
    }
    return {
        "type": "assistant",
        "message": message,
        "parent_tool_use_id": None,
        "session_id": SESSION,
        "uuid": f"{rng.getrandbits(128):032x}",
    }


def tool_result(tool_use_id: str, content: str, structured: object) -> dict[str, Any]:
    block = {"tool_use_id": tool_use_id, "type": "tool_result", "content": content}
    return {
        "type": "user",
        "message": {"role": "user", "content": [block]},
        "parent_tool_use_id": None,
        "session_id": SESSION,
        "uuid": "b7578d7e-c1e5-4508-9dde-a7d3f991445b",
        "timestamp": "2026-11-21T23:27:35.308Z",
        "tool_use_result": structured,
    }


def run_lines(corpus: list[str], rng: random.Random, run: int) -> Iterator[dict[str, Any]]:
    """One agent run: init, a few turns of tool use, a final text and the result."""
    yield {
        "type": "system",
        "subtype": "init",
        "cwd": "/work/project",
        "session_id": SESSION,
        "tools": ["Task", "Bash", "Edit", "Read", "Write", "Grep", "Glob"],
        "mcp_servers": [],
        "model": "claude-opus-5-5",
        "permissionMode": "acceptEdits",
        "claude_code_version": "2.1.330",
        "uuid": f"{rng.getrandbits(128):032x}",
    }
    yield {
        "type": "rate_limit_event",
        "rate_limit_info": {
            "status": "allowed",
            "resetsAt": 1788436200,
            "rateLimitType": "five_hour",
        },
        "session_id": SESSION,
    }
    for turn in range(rng.randint(4, 12)):
        message_id = f"msg_{run:05d}_{turn:02d}"
        tool_use_id = f"toolu_{run:05d}_{turn:02d}"
        yield assistant(message_id, {"type": "text", "text": "Let me look at that file."}, rng)
        source = rng.choice(corpus)
        kind = rng.random()
        if kind < 0.6:  # Read: the file, twice (tool_result and tool_use_result)
            path = f"/work/project/src/module_{turn}.py"
            tool_input: dict[str, Any] = {"file_path": path}
            shown = numbered(source)
            structured: object = {"type": "text", "file": {"filePath": path, "content": shown}}
            yield assistant(message_id, _tool_use(tool_use_id, "Read", tool_input), rng)
            yield tool_result(tool_use_id, shown, structured)
        elif kind < 0.85:  # Write: the content in the tool call and echoed back
            path = f"/work/project/src/new_{turn}.py"
            tool_input = {"file_path": path, "content": source}
            structured = {"type": "create", "filePath": path, "content": source}
            yield assistant(message_id, _tool_use(tool_use_id, "Write", tool_input), rng)
            yield tool_result(tool_use_id, f"File created successfully at: {path}", structured)
        else:  # Bash: a test run's output
            output = "\n".join(f"tests/test_{i}.py::test_case PASSED" for i in range(400))
            tool_input = {"command": "pytest -q", "description": "Run the tests"}
            structured = {"stdout": output, "stderr": "", "interrupted": False}
            yield assistant(message_id, _tool_use(tool_use_id, "Bash", tool_input), rng)
            yield tool_result(tool_use_id, output, structured)
    final = "The change is in place and the tests pass.\n<promise>DONE</promise>"
    yield assistant(f"msg_{run:05d}_end", {"type": "text", "text": final}, rng)
    yield {
        "type": "result",
        "subtype": "success",
        "is_error": False,
        "duration_ms": 53000,
        "num_turns": 12,
        "result": final,
        "session_id": SESSION,
        "total_cost_usd": 0.4213,
        "usage": usage(rng),
        "modelUsage": {"claude-opus-5-5": {"inputTokens": 4000, "outputTokens": 900}},
        "permission_denials": [],
    }


def _tool_use(tool_use_id: str, name: str, tool_input: dict[str, Any]) -> dict[str, Any]:
    return {"type": "tool_use", "id": tool_use_id, "name": name, "input": tool_input}


def claude_sessions(corpus: list[str], target_bytes: int) -> list[list[bytes]]:
    """Claude sessions up to ``target_bytes``, one list of lines per session."""
    rng = random.Random(20261121)
    runs: list[list[bytes]] = []
    total = 0
    while total < target_bytes:
        run = [orjson.dumps(obj) for obj in run_lines(corpus, rng, len(runs))]
        runs.append(run)
        total += sum(map(len, run))
    return runs
