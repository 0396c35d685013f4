"""Throughput of the Claude stream-json parser on a large, realistic stream.

Generates a stream shaped like `claude -p --output-format stream-json --verbose` output (init,
per-block assistant lines with text and tool_use, user tool_result lines carrying whole source
files twice as the real CLI does, rate-limit events, results) in a temp dir, then measures in
the same run, over the same lines held in memory:

    ClaudeStreamParser.feed per line
    orjson.loads per line
    json.loads per line

Budget (printed, never asserted): ClaudeStreamParser.feed >= 300 MB/s.

    .venv/bin/python bench/parse_throughput.py [MB]      (or RALPHCTL_BENCH_MB; default 200)
"""

from __future__ import annotations

import json
import os
import random
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import orjson

from ralphctl.agents.claude import ClaudeStreamParser

BUDGET_MB_S = 300.0
BIG_LINE = 64 * 1024
ROUNDS = 3
SESSION = "0f1e2d3c-4b5a-4697-8877-665544332211"


def source_corpus() -> list[str]:
    """Real source files to quote in tool results: the standard library's own."""
    stdlib = Path(json.__file__).parent.parent
    files = sorted(stdlib.glob("*.py"))
    return [f.read_text(encoding="utf-8", errors="replace") for f in files if f.stat().st_size]


def numbered(text: str) -> str:
    """A file as Claude Code's Read tool shows it: right-aligned line numbers and a tab."""
    return "".join(f"{n:>6}\t{line}\n" for n, line in enumerate(text.splitlines(), 1))


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


def generate(path: Path, target_bytes: int) -> None:
    corpus = source_corpus()
    rng = random.Random(20261121)
    written = 0
    with path.open("wb") as out:
        run = 0
        while written < target_bytes:
            for obj in run_lines(corpus, rng, run):
                line = orjson.dumps(obj) + b"\n"
                out.write(line)
                written += len(line)
            run += 1


def best_mb_per_s(
    lines: list[bytes], total: int, make_parse: Callable[[], Callable[[bytes], object]]
) -> float:
    """The best of a few rounds; ``make_parse`` gives each round a fresh parse function."""
    best = float("inf")
    for _ in range(ROUNDS):
        parse = make_parse()
        start = time.perf_counter()
        for line in lines:
            parse(line)
        best = min(best, time.perf_counter() - start)
    return total / best / 1e6


def main() -> None:
    size_mb = float(
        sys.argv[1] if len(sys.argv) > 1 else os.environ.get("RALPHCTL_BENCH_MB", "200")
    )
    with tempfile.TemporaryDirectory(prefix="ralphctl-bench-") as tmp:
        stream = Path(tmp) / "stream.jsonl"
        generate(stream, int(size_mb * 1e6))
        lines = stream.read_bytes().splitlines()
    total = sum(len(line) for line in lines)
    users = [line for line in lines if line.startswith(b'{"type":"user"')]
    big = [line for line in lines if len(line) >= BIG_LINE]
    print(
        f"stream: {total / 1e6:.1f} MB in {len(lines)} lines;"
        f" user (tool output) lines hold {sum(map(len, users)) / total:.0%} of the bytes,"
        f" lines >= 64 KB {sum(map(len, big)) / total:.0%}"
    )

    feed = best_mb_per_s(lines, total, lambda: ClaudeStreamParser().feed)  # one per agent run
    with_orjson = best_mb_per_s(lines, total, lambda: orjson.loads)
    with_json = best_mb_per_s(lines, total, lambda: json.loads)

    print(f"ClaudeStreamParser.feed  {feed:8.0f} MB/s")
    print(f"orjson.loads per line    {with_orjson:8.0f} MB/s")
    print(f"json.loads per line      {with_json:8.0f} MB/s")
    print(f"feed / orjson.loads      {feed / with_orjson:8.2f}x")
    print(f"feed / json.loads        {feed / with_json:8.2f}x")
    verdict = "met" if feed >= BUDGET_MB_S else "NOT met"
    print(f"budget: feed >= {BUDGET_MB_S:.0f} MB/s ... {verdict}")


if __name__ == "__main__":
    main()
