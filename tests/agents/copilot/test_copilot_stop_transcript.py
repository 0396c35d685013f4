"""The hook reads Copilot's final text from `events.jsonl`, which CLI 1.0.102 writes in
batches: at an agentStop the turn's last message may not be there yet, and the hook waits
for the batch that brings this stop's own `hook.start` (recorded event shapes)."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

from ralphctl.hook.copilot_transcript import final_text

STOP = 1795869165662
EARLIER_STOP = 1795869164773


def message(text: str, **data: Any) -> dict[str, Any]:
    return {"type": "assistant.message", "data": {"messageId": text, "content": text, **data}}


def hook_start(stamp: int) -> dict[str, Any]:
    hook_input = {"sessionId": "s", "stopReason": "end_turn", "timestamp": stamp}
    return {"type": "hook.start", "data": {"hookType": "agentStop", "input": hook_input}}


def write(path: Path, *events: dict[str, Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(event) + "\n" for event in events))
    return path


def test_the_last_message_before_this_stops_hook_start_is_the_final_text(tmp_path):
    events = write(
        tmp_path / "s" / "events.jsonl",
        message("Working (1)."),
        hook_start(EARLIER_STOP),
        message("Working (2)."),
        message("Sub-agent notes.", parentToolCallId="call-1"),
        hook_start(STOP),
        message("Working (3)."),  # a later turn, written before the hook read the file
    )

    assert final_text(str(events), STOP, wait_s=0) == "Working (2)."


def test_a_transcript_behind_the_stop_is_waited_for(tmp_path):
    events = write(
        tmp_path / "s" / "events.jsonl", message("Working (1)."), hook_start(EARLIER_STOP)
    )

    def flush() -> None:
        time.sleep(0.1)
        with events.open("a") as lines:
            lines.write(json.dumps(message("Done.")) + "\n" + json.dumps(hook_start(STOP)) + "\n")

    writer = threading.Thread(target=flush)
    writer.start()
    assert final_text(str(events), STOP) == "Done."
    writer.join()


def test_the_first_stop_waits_for_the_file_in_the_session_folder(tmp_path):
    events = tmp_path / "s" / "events.jsonl"
    events.parent.mkdir()
    writer = threading.Timer(0.1, lambda: write(events, message("Done."), hook_start(STOP)))
    writer.start()
    assert final_text(str(events), STOP) == "Done."
    writer.join()


def test_a_transcript_that_never_catches_up_gives_what_it_has_after_the_wait(tmp_path):
    events = write(
        tmp_path / "s" / "events.jsonl", message("Working (1)."), hook_start(EARLIER_STOP)
    )
    started = time.monotonic()

    assert final_text(str(events), STOP, wait_s=0.2) == "Working (1)."
    assert time.monotonic() - started >= 0.2


def test_a_transcript_without_hook_events_is_read_as_it_is_at_once(tmp_path):
    events = write(tmp_path / "s" / "events.jsonl", message("Working."), message(""))
    assert final_text(str(events), STOP) == ""  # tool calls only: no text
    assert final_text(str(tmp_path / "nowhere" / "events.jsonl"), STOP) == ""
    assert final_text(None, STOP) == ""


def test_without_the_stops_timestamp_the_hook_does_not_wait(tmp_path):
    events = write(
        tmp_path / "s" / "events.jsonl", message("Working (1)."), hook_start(EARLIER_STOP)
    )
    started = time.monotonic()

    assert final_text(str(events), None) == "Working (1)."
    assert time.monotonic() - started < 1
