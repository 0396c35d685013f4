"""An offline stand-in for Claude Code: ``python -m ralphctl.agents.scripted_agent SCRIPT.json``.

It reads the prompt on stdin, takes step ``min(n, len(steps))`` of the script for iteration
``n`` (env ``RALPHCTL_ITERATION``, 1-based), performs the step's file edits and shell commands
in the working directory for real, and prints what ``claude -p --output-format stream-json
--verbose`` (CLI 2.1.330) would: ``system/init``, one ``assistant`` line per content block
(blocks of a message share ``message.id`` and repeat its usage), ``user`` tool_result lines,
and a ``result`` line. The script format is in docs/scripted-agent.md.

Standard library only and nothing heavy at import: its start-up time is part of a benchmark.
"""

from __future__ import annotations

import json
import os
import sys
import time

TYPE_CHECKING = False  # type checkers take it as true; importing typing costs start-up time
if TYPE_CHECKING:
    from typing import Any

MODEL = "scripted-model"
VERSION = "2.1.330-scripted"
EXIT_BAD_SCRIPT = 2


def main(argv: list[str]) -> int:
    if len(argv) not in (1, 3) or (len(argv) == 3 and argv[1] != "--session-id"):
        print("usage: scripted_agent SCRIPT.json [--session-id ID]", file=sys.stderr)
        return EXIT_BAD_SCRIPT
    try:
        step = load_step(argv[0], _iteration())
    except (OSError, ValueError) as exc:
        print(f"scripted agent: bad script {argv[0]}: {exc}", file=sys.stderr)
        return EXIT_BAD_SCRIPT
    prompt = sys.stdin.buffer.read()  # read it all, like the CLI does
    session_id = argv[2] if len(argv) == 3 else _new_uuid()
    try:
        _save_prompt(step, prompt)
        return Run(step, session_id, os.getcwd()).play()
    except (TypeError, ValueError, AttributeError) as exc:
        print(f"scripted agent: bad step in {argv[0]}: {exc!r}", file=sys.stderr)
        return EXIT_BAD_SCRIPT


def _save_prompt(step: dict[str, Any], prompt: bytes) -> None:
    """``save_prompt``: append the prompt to this file (outside the work dir is fine: tests)."""
    target = step.get("save_prompt")
    if target:
        with open(str(target), "ab") as f:
            f.write(prompt + b"\n\x1e\n")  # record separator between iterations


def load_step(script_path: str, iteration: int) -> dict[str, Any]:
    """Step ``min(iteration, len(steps))`` (1-based) of the script; ``{}`` if it has none."""
    with open(script_path, encoding="utf-8") as f:
        script = json.load(f)
    steps = script.get("steps") if isinstance(script, dict) else None
    if not isinstance(steps, list) or not all(isinstance(s, dict) for s in steps):
        raise ValueError('expected {"steps": [ {...}, ... ]}')
    return steps[min(max(iteration, 1), len(steps)) - 1] if steps else {}


class Run:
    """One iteration: prints the stream while doing the step's work."""

    def __init__(self, step: dict[str, Any], session_id: str, cwd: str) -> None:
        self.step = step
        self.session_id = session_id
        self.cwd = os.path.realpath(cwd)
        self.started = time.monotonic()
        self.messages = 0
        self.tool_uses = 0
        self.denials: list[dict[str, Any]] = []
        tokens = step.get("tokens") or {}
        self.model = str(step.get("model") or MODEL)
        self.usage = {
            "input_tokens": int(tokens.get("input", 0)),
            "cache_creation_input_tokens": int(tokens.get("cache_write", 0)),
            "cache_read_input_tokens": int(tokens.get("cache_read", 0)),
            "output_tokens": int(tokens.get("output", 0)),
        }

    def play(self) -> int:
        step = self.step
        self.emit_init()
        for line in step.get("garbage", []):
            _write_raw(str(line))
        if step.get("rate_limit"):
            self.emit({"type": "rate_limit_event", "rate_limit_info": step["rate_limit"]})
        if step.get("edits") or step.get("bash") or step.get("permission_denials"):
            message_id = self.next_message_id()
            for denial in step.get("permission_denials", []):
                self.deny(message_id, denial)
            for edit in step.get("edits", []):
                self.use_tool(message_id, *self.edit(edit))
            for command in step.get("bash", []):
                self.use_tool(message_id, *self.bash(str(command)))
        time.sleep(float(step.get("sleep_s", 0)))
        is_error = bool(step.get("is_error", False))
        text = self.final_text(is_error)
        if text:
            self.emit_assistant(self.next_message_id(), {"type": "text", "text": text})
        if step.get("stderr"):
            sys.stderr.write(str(step["stderr"]))
            sys.stderr.flush()
        failed = is_error or bool(step.get("no_result"))
        code = step.get("exit_code")
        exit_code = int(code) if code is not None else int(failed)
        if not step.get("no_result"):
            self.emit_result(is_error, text)
        return exit_code

    def final_text(self, is_error: bool) -> str:
        if not is_error:
            return str(self.step.get("text", ""))
        status = self.step.get("api_error_status")
        return str(self.step.get("error") or (f"API Error: {status}" if status else "Error"))

    # --- tools -------------------------------------------------------------------------------

    def edit(self, edit: dict[str, Any]) -> tuple[str, dict[str, Any], str, bool]:
        """Perform one edit: (tool name, tool input, tool output, is_error)."""
        rel = str(edit.get("path", ""))
        target = os.path.realpath(os.path.join(self.cwd, rel))
        tool_input: dict[str, Any]
        if edit.get("delete"):
            tool, tool_input = "Bash", {"command": f"rm -- {rel}", "description": f"Delete {rel}"}
        elif "append" in edit:
            tool, tool_input = "Edit", {"file_path": target, "append": str(edit["append"])}
        else:
            tool, tool_input = (
                "Write",
                {"file_path": target, "content": str(edit.get("content", ""))},
            )
        if not rel or os.path.commonpath([self.cwd, target]) != self.cwd or target == self.cwd:
            return tool, tool_input, f"refused: {rel!r} is outside the working directory", True
        try:
            if tool == "Bash":
                os.remove(target)
                return tool, tool_input, "", False
            os.makedirs(os.path.dirname(target), exist_ok=True)
            with open(target, "a" if tool == "Edit" else "w", encoding="utf-8") as f:
                f.write(tool_input["append"] if tool == "Edit" else tool_input["content"])
        except OSError as exc:
            return tool, tool_input, f"{exc.strerror}: {rel}", True
        return tool, tool_input, f"The file {target} has been updated.", False

    def bash(self, command: str) -> tuple[str, dict[str, Any], str, bool]:
        import subprocess  # only steps with shell commands pay for it

        done = subprocess.run(
            command,
            shell=True,
            cwd=self.cwd,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            errors="replace",
            check=False,
        )
        output = (done.stdout + done.stderr).rstrip("\n")
        return "Bash", {"command": command}, output, done.returncode != 0

    def use_tool(
        self, message_id: str, name: str, tool_input: dict[str, Any], output: str, failed: bool
    ) -> None:
        tool_use_id = self.emit_tool_use(message_id, name, tool_input)
        self.emit_tool_result(tool_use_id, output, failed)

    def deny(self, message_id: str, denial: dict[str, Any]) -> None:
        name = str(denial.get("tool_name", "Bash"))
        tool_input = denial.get("tool_input") or {}
        tool_use_id = self.emit_tool_use(message_id, name, tool_input)
        message = f"Permission to use {name} has been denied."
        self.emit(
            {
                "type": "system",
                "subtype": "permission_denied",
                "tool_name": name,
                "tool_use_id": tool_use_id,
                "message": message,
            }
        )
        self.emit_tool_result(tool_use_id, message, True)
        self.denials.append(
            {"tool_name": name, "tool_use_id": tool_use_id, "tool_input": tool_input}
        )

    # --- stream lines ------------------------------------------------------------------------

    def emit(self, obj: dict[str, Any]) -> None:
        obj.setdefault("session_id", self.session_id)
        obj["uuid"] = _new_uuid()
        _write_raw(json.dumps(obj, separators=(",", ":"), ensure_ascii=False))

    def emit_init(self) -> None:
        self.emit(
            {
                "type": "system",
                "subtype": "init",
                "cwd": self.cwd,
                "session_id": self.session_id,
                "tools": ["Bash", "Edit", "Read", "Write"],
                "mcp_servers": [],
                "model": self.model,
                "permissionMode": "default",
                "slash_commands": [],
                "apiKeySource": "none",
                "claude_code_version": VERSION,
                "output_style": "default",
                "agents": [],
                "skills": [],
                "plugins": [],
            }
        )

    def emit_assistant(self, message_id: str, block: dict[str, Any]) -> None:
        message = {
            "id": message_id,
            "type": "message",
            "role": "assistant",
            "model": self.model,
            "content": [block],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": self.usage,
        }
        self.emit({"type": "assistant", "message": message, "parent_tool_use_id": None})

    def emit_tool_use(self, message_id: str, name: str, tool_input: dict[str, Any]) -> str:
        self.tool_uses += 1
        tool_use_id = f"toolu_scripted_{self.tool_uses:03d}"
        block = {"type": "tool_use", "id": tool_use_id, "name": name, "input": tool_input}
        self.emit_assistant(message_id, block)
        return tool_use_id

    def emit_tool_result(self, tool_use_id: str, output: str, failed: bool) -> None:
        block = {
            "tool_use_id": tool_use_id,
            "type": "tool_result",
            "content": output,
            "is_error": failed,
        }
        self.emit(
            {
                "type": "user",
                "message": {"role": "user", "content": [block]},
                "parent_tool_use_id": None,
                "tool_use_result": output if failed else {"stdout": output, "stderr": ""},
            }
        )

    def emit_result(self, is_error: bool, text: str) -> None:
        step = self.step
        cost = step.get("cost_usd", 0.0)  # null: report tokens only, like agents without a cost
        subtype = str(step.get("subtype", "success"))
        duration_ms = round((time.monotonic() - self.started) * 1000)
        result: dict[str, Any] = {
            "type": "result",
            "subtype": subtype,
            "is_error": is_error,
            "api_error_status": step.get("api_error_status"),
            "duration_ms": duration_ms,
            "duration_api_ms": duration_ms,
            "num_turns": self.messages,
            "stop_reason": None if is_error else "end_turn",
            "session_id": self.session_id,
            "usage": self.usage,
            "modelUsage": {
                self.model: {
                    "inputTokens": self.usage["input_tokens"],
                    "outputTokens": self.usage["output_tokens"],
                    "cacheReadInputTokens": self.usage["cache_read_input_tokens"],
                    "cacheCreationInputTokens": self.usage["cache_creation_input_tokens"],
                    "webSearchRequests": 0,
                }
            },
            "permission_denials": self.denials,
            "terminal_reason": "api_error" if is_error else "completed",
        }
        if cost is not None:
            result["total_cost_usd"] = float(cost)
            result["modelUsage"][self.model]["costUSD"] = float(cost)
        if subtype == "success":
            result["result"] = text
        else:
            result["errors"] = [text]
        self.emit(result)

    def next_message_id(self) -> str:
        self.messages += 1
        return f"msg_scripted_{self.messages:03d}"


def _iteration() -> int:
    try:
        return int(os.environ.get("RALPHCTL_ITERATION", "1"))
    except ValueError:
        return 1


def _new_uuid() -> str:
    h = os.urandom(16).hex()
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-a{h[17:20]}-{h[20:32]}"


def _write_raw(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
