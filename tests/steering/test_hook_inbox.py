"""The same-session inbox beside the tracker: posted by `tell`, emptied by the Stop hook."""

from __future__ import annotations

import json
from pathlib import Path

from ralphctl.hook.inbox import INBOX_NAME, post, take


def tracker_in(tmp_path: Path) -> str:
    return str(tmp_path / "loop-tracker.md")


def test_what_is_posted_is_taken_once_oldest_first(tmp_path: Path):
    tracker = tracker_in(tmp_path)
    post(tracker, 4, "Use tabs.")
    post(tracker, 9, "Keep the API stable.")

    assert take(tracker) == ([(4, "Use tabs."), (9, "Keep the API stable.")], None)
    assert take(tracker) == ([], None)
    assert not (tmp_path / INBOX_NAME).exists()


def test_a_missing_inbox_is_empty(tmp_path: Path):
    assert take(tracker_in(tmp_path)) == ([], None)


def test_a_corrupt_inbox_is_set_aside_with_a_problem_and_counts_as_empty(tmp_path: Path):
    (tmp_path / INBOX_NAME).write_text('[{"seq": "one", "text": 5}]')

    waiting, problem = take(tracker_in(tmp_path))

    assert waiting == []
    assert problem is not None
    assert "corrupt" in problem
    assert (tmp_path / f"{INBOX_NAME}.corrupt").exists()
    assert not (tmp_path / INBOX_NAME).exists()


def test_a_post_onto_a_corrupt_inbox_starts_a_new_one(tmp_path: Path):
    (tmp_path / INBOX_NAME).write_text("not json")
    post(tracker_in(tmp_path), 2, "Go on.")

    assert json.loads((tmp_path / INBOX_NAME).read_text()) == [{"seq": 2, "text": "Go on."}]
