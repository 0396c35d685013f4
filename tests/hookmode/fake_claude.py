"""A stand-in for ``claude -p`` that plays scripted turns and runs the Stop hook it is given.

For runner situations the real CLI cannot be made to produce on demand: a Stop the hook must
decide alone, the same Stop sent twice, a session that ends on its own. Each process plays
the next run of the script (``FAKE_CLAUDE_SCRIPT``, a JSON list of runs; the count of runs
played is kept next to it). A run is a list of turns; a turn is an object:

- ``text``: the assistant's final text of the turn; then the Stop hook runs;
- ``"alone": true``: this Stop's hook cannot reach the runner (decides locally);
- ``"twice": true``: the hook runs twice for this Stop, as with two registrations;
- ``"error": true``: the API fails, the run ends with an error result (exit 1);
- ``"usage_limited": S``: the API answers 429, its usage limit resetting in S seconds; the run
  ends with an error result as the real CLI's (exit 1);
- ``"sleep_s": S``: the model takes S seconds before it answers (time to stop it);
- ``"then_sleep_s": S``: after its answer the turn goes on S seconds before it stops;
- ``"tools": [{"name": N, "input": {...}, "denied": false}]``: before its answer the model
  calls these tools (in one message; a tool is not run, its result says it ran); a denied
  one is refused as Claude Code refuses it (a ``permission_denied`` line, an error result).

Every answer the hook prints is appended, one JSON line each, to the ``.answers`` file next
to the script, and the prompt of each run (its stdin) to the ``.prompts`` file.

A run that ends while the hook still blocks ends like Claude Code's block cap: ``result: ""``.
Every turn costs 1000 input and 100 output tokens ($0.006 at claude-opus-5-5's prices).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

TURN_COST = 0.006


def main() -> int:
    args = sys.argv[1:]
    session = args[args.index("--session-id") + 1] if "--session-id" in args else None
    session = session or args[args.index("--resume") + 1]
    settings = json.loads(args[args.index("--settings") + 1])
    hook = settings["hooks"]["Stop"][0]["hooks"][0]["command"]
    prompt = sys.stdin.read()
    script = Path(os.environ["FAKE_CLAUDE_SCRIPT"])
    with script.with_suffix(".prompts").open("a") as prompts:
        prompts.write(json.dumps(prompt) + "\n")
    played = script.with_suffix(".played")
    index = int(played.read_text()) if played.exists() else 0
    counted = played.with_suffix(".counting")
    counted.write_text(str(index + 1))
    counted.replace(played)  # whole or not there: a run killed now leaves no empty count
    turns: list[dict[str, Any]] = json.loads(script.read_text())[index]
    emit({"type": "system", "subtype": "init", "session_id": session, "model": "claude-opus-5-5"})
    active, cost = False, 0.0
    for n, turn in enumerate(turns):
        if turn.get("error"):
            return finish(session, "API Error: 529 overloaded", cost, error=True)
        if "usage_limited" in turn:
            reset = round(time.time() + turn["usage_limited"])
            text = f"API Error: Request rejected (429) · Claude AI usage limit reached|{reset}"
            return finish(session, text, cost, error=True, status=429)
        time.sleep(turn.get("sleep_s", 0))
        cost += TURN_COST
        if turn.get("tools"):
            call_tools(f"msg_{index}_{n}_tools", turn["tools"], session)
        emit(assistant(f"msg_{index}_{n}", turn["text"], session))
        time.sleep(turn.get("then_sleep_s", 0))
        stop = {
            "session_id": session,
            "hook_event_name": "Stop",
            "stop_hook_active": active,
            "last_assistant_message": turn["text"],
            "cwd": os.getcwd(),
        }
        env = dict(os.environ, CLAUDE_PROJECT_DIR=os.getcwd(), CLAUDE_CODE_SESSION_ID=session)
        if turn.get("alone"):
            env["RALPHCTL_HOOK_SOCKET"] = "/nonexistent/stop.sock"
        answers = [run_hook(hook, stop, env) for _ in range(2 if turn.get("twice") else 1)]
        with script.with_suffix(".answers").open("a") as log:
            log.writelines(json.dumps(answer) + "\n" for answer in answers)
        active = any(answer.get("decision") == "block" for answer in answers)
        if not active:
            return finish(session, turn["text"], cost)
    return finish(session, "", cost)  # still blocked: ended as by the block cap


def run_hook(command: str, stop: dict[str, Any], env: dict[str, str]) -> dict[str, Any]:
    done = subprocess.run(
        command,
        shell=True,
        input=json.dumps(stop),
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    return json.loads(done.stdout) if done.stdout.strip() else {}


def call_tools(message_id: str, tools: list[dict[str, Any]], session: str) -> None:
    """One assistant message calling ``tools``, then each call's result (or refusal)."""
    blocks = [
        {"type": "tool_use", "id": f"{message_id}_{i}", "name": t["name"], "input": t["input"]}
        for i, t in enumerate(tools)
    ]
    message = {"id": message_id, "model": "claude-opus-5-5", "content": blocks, "usage": {}}
    emit({"type": "assistant", "message": message, "parent_tool_use_id": None})
    for block, tool in zip(blocks, tools, strict=True):
        output = "ok"
        if tool.get("denied"):
            output = f"Permission to use {tool['name']} has been denied."
            denial = {"tool_name": tool["name"], "tool_use_id": block["id"], "message": output}
            emit({"type": "system", "subtype": "permission_denied", **denial})
        result = {
            "type": "tool_result",
            "tool_use_id": block["id"],
            "content": output,
            "is_error": bool(tool.get("denied")),
        }
        emit(
            {
                "type": "user",
                "message": {"role": "user", "content": [result]},
                "session_id": session,
            }
        )


def assistant(message_id: str, text: str, session: str) -> dict[str, Any]:
    usage = {"input_tokens": 1000, "output_tokens": 1}
    message = {
        "id": message_id,
        "model": "claude-opus-5-5",
        "content": [{"type": "text", "text": text}],
        "usage": usage,
    }
    return {
        "type": "assistant",
        "message": message,
        "parent_tool_use_id": None,
        "session_id": session,
    }


def finish(
    session: str, text: str, cost: float, *, error: bool = False, status: int | None = None
) -> int:
    turns = round(cost / TURN_COST)
    usage = {"inputTokens": 1000 * turns, "outputTokens": 100 * turns, "costUSD": cost}
    emit(
        {
            "type": "result",
            "subtype": "success",
            "is_error": error,
            "result": text,
            "session_id": session,
            "total_cost_usd": cost,
            "modelUsage": {"claude-opus-5-5": usage},
            "model_usage_since_last_result": {"claude-opus-5-5": usage},
            **({"api_error_status": status} if status else {}),
        }
    )
    return 1 if error else 0


def emit(line: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(line) + "\n")
    sys.stdout.flush()


if __name__ == "__main__":
    sys.exit(main())
