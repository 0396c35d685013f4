"""A workflow's loop in fresh mode: its tracker file, its continue message, and settings its
agent cannot apply."""

from __future__ import annotations

import asyncio
import json
import os
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from ralphctl.agents.registry import adapter_for
from ralphctl.domain.config import ConfigInvalid, LoopConfig
from ralphctl.domain.states import LoopStatus, StopReason
from ralphctl.engine.fresh_tracker import FreshTracker
from ralphctl.engine.runner import LoopRunner
from ralphctl.store.records import EventRecord, LoopRecord
from ralphctl.store.repository import Store

FAST = {"cooldown": 0, "checkpoint_interval": 0, "error_backoff_cap": 0}
TEMPLATE = "# Plan\n\nEnd this file with COMPLETE once every box is ticked.\n\n- [ ] the parser"
CONTINUE = "Pick the next unticked box."
TRACKER_GLOB = ".ralph/loops/*/loop-tracker.md"
PROMPT_END = "\x1e"  # the scripted agent's separator between saved prompts


class Events:
    """A LoopObserver that keeps the loop's events."""

    def __init__(self) -> None:
        self.seen: list[EventRecord] = []

    def on_event(self, event: EventRecord) -> None:
        self.seen.append(event)

    def on_agent_event(self, iteration: int, event: Any) -> None:
        """Agent events are not needed here."""

    def warnings(self) -> list[str]:
        return [e.data["message"] for e in self.seen if e.event_type == "warning"]


def run_loop(
    db: Store,
    workdir: Path,
    steps: list[dict[str, Any]],
    *,
    loop_id: str | None = None,
    **settings: Any,
) -> tuple[LoopRecord, Events]:
    script = workdir.parent / f"script-{uuid.uuid4().hex[:6]}.json"
    script.write_text(json.dumps({"steps": steps}))
    config = LoopConfig(**{**FAST, **settings, "agent": "scripted", "script": str(script)})
    loop = db.create_loop(
        LoopRecord(
            id=loop_id or uuid.uuid4().hex[:12],
            name="workflow",
            mode="fresh",
            agent="scripted",
            workdir=str(workdir),
            task="Write the parser.",
            config=config.to_json(),
            status=LoopStatus.PENDING,
            created_at=datetime.now(UTC),
        )
    )
    events = Events()
    adapter = adapter_for("scripted", options={"script": str(script)})
    final = asyncio.run(LoopRunner(db, adapter, loop, config, observer=events).run())
    return final, events


def saved_prompts(workdir: Path) -> list[str]:
    return (workdir / "prompts.txt").read_text().split(PROMPT_END + "\n")[:-1]


def tick(line: str) -> dict[str, Any]:
    """A step that appends ``line`` to the loop's tracker (its path holds the loop id)."""
    append = f"for f in {TRACKER_GLOB}; do printf '%s\\n' '{line}' >> \"$f\"; done"
    return {"text": "Worked on it.", "bash": [append]}


def test_the_tracker_is_made_from_the_template_before_the_first_iteration(db, workdir):
    steps = [{"text": "Read it.", "bash": [f"cp {TRACKER_GLOB} seen.md"]}]
    final, _ = run_loop(db, workdir, steps, tracker_template=TEMPLATE, max_iterations=1)
    tracker = FreshTracker(workdir, final.id).path
    assert tracker == workdir / ".ralph" / "loops" / final.id / "loop-tracker.md"
    assert (workdir / "seen.md").read_text() == TEMPLATE + "\n"


def test_the_marker_on_the_trackers_last_line_completes_the_loop(db, workdir):
    steps = [tick("- [x] the parser"), tick("COMPLETE")]
    final, _ = run_loop(db, workdir, steps, tracker_template=TEMPLATE, completion_signal="COMPLETE")
    assert (final.status, final.stop_reason, final.iteration) == (
        LoopStatus.COMPLETED,
        StopReason.COMPLETION,
        2,
    )
    assert [it.completion_signal_found for it in db.iterations(final.id)] == [False, True]


def test_the_marker_mentioned_in_the_template_does_not_end_the_loop(db, workdir):
    final, _ = run_loop(
        db, workdir, [{"text": "Nothing yet."}], tracker_template=TEMPLATE, max_iterations=2
    )
    assert (final.stop_reason, final.iteration) == (StopReason.MAX_ITERATIONS, 2)


def test_a_blocked_last_line_in_the_tracker_ends_the_loop_as_blocked(db, workdir):
    final, _ = run_loop(
        db, workdir, [tick("BLOCKED: the schema is missing")], tracker_template=TEMPLATE
    )
    assert (final.status, final.stop_detail) == (LoopStatus.BLOCKED, "the schema is missing")


def test_every_prompt_names_the_tracker_and_later_ones_open_with_the_continue_message(db, workdir):
    steps = [{"text": "Working.", "save_prompt": "prompts.txt"}]
    final, _ = run_loop(
        db,
        workdir,
        steps,
        tracker_template=TEMPLATE,
        continue_message=CONTINUE,
        max_iterations=3,
    )
    prompts = saved_prompts(workdir)
    relative = f".ralph/loops/{final.id}/loop-tracker.md"
    assert len(prompts) == 3
    assert all(f"Progress tracker: `{relative}`" in prompt for prompt in prompts)
    assert prompts[0].startswith("Write the parser.")
    assert all(prompt.startswith(f"{CONTINUE}\n\nWrite the parser.") for prompt in prompts[1:])


def test_a_loop_without_a_template_keeps_no_tracker(db, workdir):
    steps = [{"text": "Working.", "save_prompt": "prompts.txt"}]
    run_loop(db, workdir, steps, max_iterations=1)
    assert not (workdir / ".ralph" / "loops").exists()
    assert "Progress tracker" not in saved_prompts(workdir)[0]


def test_a_resumed_loop_keeps_the_tracker_its_agent_wrote(db, workdir):
    loop_id = uuid.uuid4().hex[:12]
    tracker = FreshTracker(workdir, loop_id).path
    tracker.parent.mkdir(parents=True)
    tracker.write_text("# Plan\n\n- [x] the parser\n")
    run_loop(db, workdir, [{"text": "Go on."}], tracker_template=TEMPLATE, loop_id=loop_id)
    assert tracker.read_text() == "# Plan\n\n- [x] the parser\n"


def test_a_tracker_that_is_not_a_regular_file_is_a_warning_not_a_hang(db, workdir):
    loop_id = uuid.uuid4().hex[:12]
    tracker = FreshTracker(workdir, loop_id).path
    tracker.parent.mkdir(parents=True)
    os.mkfifo(tracker)
    final, events = run_loop(
        db,
        workdir,
        [{"text": "Go on."}],
        tracker_template=TEMPLATE,
        loop_id=loop_id,
        max_iterations=2,
    )
    assert (final.stop_reason, final.iteration) == (StopReason.MAX_ITERATIONS, 2)
    assert any(message.startswith("tracker: ") for message in events.warnings())


def test_a_template_whose_last_line_declares_completion_is_refused():
    with pytest.raises(ConfigInvalid, match="tracker_template: its last line already declares"):
        LoopConfig(tracker_template="# Plan\n\n<promise>COMPLETE</promise>")


def test_a_temperature_the_agent_cannot_take_is_a_warning_naming_the_agent(db, workdir):
    _, events = run_loop(db, workdir, [{"text": "Go."}], temperature=0.0, max_iterations=1)
    assert "temperature is ignored: the scripted agent has no temperature setting" in (
        events.warnings()
    )


def test_a_symlinked_loops_directory_is_never_written_through(db, workdir, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (workdir / ".ralph").mkdir()
    (workdir / ".ralph" / "loops").symlink_to(outside)
    _, events = run_loop(
        db, workdir, [{"text": "Go on."}], tracker_template=TEMPLATE, max_iterations=1
    )
    assert list(outside.iterdir()) == []
    assert any(message.startswith("tracker: cannot create") for message in events.warnings())
