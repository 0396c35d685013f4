"""``ralphctl-hook arm|cancel|status``: what the slash commands run (argparse).

Flags take ``--flag value`` and ``--flag=value``; an unknown flag is an error, never prompt
text (the official plugin read ``--max-iterations=3`` as prompt words and ran unbounded).
"""

from __future__ import annotations

import argparse
import os
import sys

from ralphctl.domain import defaults
from ralphctl.hook import control
from ralphctl.hook.arming import DEFAULT_TEMPLATE, ArmError, arm
from ralphctl.hook.record import MODE_ENV, dispatch


def main(command: str, argv: list[str]) -> int:
    if command == "arm":
        return _arm(argv)
    if command == "cancel":
        return _cancel(argv)
    return _status(argv)


def _arm(argv: list[str]) -> int:
    parser = _parser("arm", "Arm a Ralph loop for this Claude Code session.")
    parser.add_argument("prompt", nargs="*", help="The task (words are joined with spaces).")
    parser.add_argument(
        "--max-iterations",
        type=int,
        help=f"Stop after N iterations (default {defaults.MAX_ITERATIONS}; 0 is refused).",
    )
    parser.add_argument(
        "--unlimited", action="store_true", help="No iteration limit (the runtime limit stays)."
    )
    marker = parser.add_mutually_exclusive_group()
    marker.add_argument("--completion-promise", help="Complete on <promise>TEXT</promise>.")
    marker.add_argument("--completion-signal", help="Raw signal, e.g. a plain RALPH_DONE line.")
    parser.add_argument("--max-runtime", help="Runtime limit: seconds or 90m, 4h… (default 4h).")
    parser.add_argument("--max-cost", type=float, help="Cost limit in USD (needs a runner).")
    parser.add_argument("--max-tokens", type=int, help="Token limit (needs a runner).")
    parser.add_argument("--continue-message", help="What each block tells the agent.")
    parser.add_argument("--tracker-template", help="Markdown file for the tracker body.")
    parser.add_argument("--replace", action="store_true", help="Replace this session's loop.")
    parser.add_argument(
        "--clear-context",
        action="store_true",
        help="Gemini CLI: start each iteration with a fresh context (the tracker keeps the task).",
    )
    args = parser.parse_intermixed_args(argv)
    try:
        armed = arm(
            _project(args.project),
            " ".join(args.prompt),
            session_id=_session(args.session),
            max_iterations=_max_iterations(args.max_iterations, args.unlimited),
            completion_signal=_signal(args.completion_promise, args.completion_signal),
            max_runtime_s=_runtime(args.max_runtime),
            max_cost_usd=args.max_cost,
            max_tokens=args.max_tokens,
            continue_message=args.continue_message or defaults.CONTINUE_MESSAGE,
            template=_template(args.tracker_template),
            replace=args.replace,
            clear_context=args.clear_context,
        )
    except (ArmError, OSError) as exc:
        return _fail(str(exc))
    print(armed.confirmation())
    return 0


def _cancel(argv: list[str]) -> int:
    args = _parser("cancel", "Deactivate this session's Ralph loop.").parse_args(argv)
    result = control.cancel(_project(args.project), _session(args.session))
    print(result.message)
    if result.record is not None:
        dispatch(result.record, os.environ.get(MODE_ENV))
    return 0


def _status(argv: list[str]) -> int:
    args = _parser("status", "Show this session's Ralph loop.").parse_args(argv)
    session = _session(args.session)
    loops = control.list_loops(_project(args.project))
    if session is not None:  # this session's loop, finished or not
        shown = [info for info in loops if info.session_id == session]
    else:
        shown = [info for info in loops if info.active or info.problem]
    print("\n".join(info.describe() for info in shown) if shown else control.NO_LOOP)
    return 0


def _parser(command: str, description: str) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=f"ralphctl-hook {command}", description=description, allow_abbrev=False
    )
    parser.add_argument("--session", help="Session id (default: $CLAUDE_CODE_SESSION_ID).")
    parser.add_argument("--project", help="Project dir (default: $CLAUDE_PROJECT_DIR, else .).")
    return parser


def _project(explicit: str | None) -> str:
    return os.path.abspath(explicit or os.environ.get("CLAUDE_PROJECT_DIR") or os.getcwd())


def _session(explicit: str | None) -> str | None:
    return explicit or os.environ.get("CLAUDE_CODE_SESSION_ID") or None


def _max_iterations(value: int | None, unlimited: bool) -> int | None:
    if unlimited and value is not None:
        raise ArmError("choose --max-iterations N or --unlimited, not both")
    if unlimited:
        return None
    return defaults.MAX_ITERATIONS if value is None else value


def _signal(promise_text: str | None, signal: str | None) -> str:
    if promise_text is not None:
        from ralphctl.domain.markers import promise

        try:
            return promise(promise_text).signal
        except ValueError as exc:
            raise ArmError(f"--completion-promise: {exc}") from None
    return signal or defaults.COMPLETION_SIGNAL


def _runtime(text: str | None) -> float | None:
    if text is None:
        return defaults.MAX_RUNTIME_S
    from ralphctl.domain.numbers import parse_duration

    try:
        return parse_duration(text)
    except ValueError as exc:
        raise ArmError(f"--max-runtime: {exc}") from None


def _template(path: str | None) -> str:
    if path is None:
        return DEFAULT_TEMPLATE
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read()
    except (OSError, UnicodeDecodeError) as exc:
        raise ArmError(f"--tracker-template: cannot read {path}: {exc}") from None


def _fail(message: str) -> int:
    sys.stderr.write(f"ralphctl-hook: error: {message}\n")
    return 2
