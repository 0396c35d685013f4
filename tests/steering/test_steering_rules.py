"""The pure rules of steering: what a message may be, what is pending, how a prompt shows it."""

from __future__ import annotations

import pytest

from ralphctl.domain.steering import (
    HEADING,
    MAX_MESSAGE_CHARS,
    InvalidMessage,
    Message,
    delivered_seqs,
    message_data,
    pending,
    section,
)


def message(seq: int, text: str = "hi") -> Message:
    return Message(seq, text, "ana", "2026-11-23T10:00:00+00:00")


def test_a_message_is_pending_until_an_iteration_lists_its_seq():
    sent = [message(3), message(7), message(9)]

    assert pending(sent, {7}) == [message(3), message(9)]
    assert pending(sent, {3, 7, 9}) == []


def test_pending_messages_come_oldest_first_whatever_order_they_were_read_in():
    assert [m.seq for m in pending([message(9), message(3)], ())] == [3, 9]


def test_only_whole_numbers_in_a_list_count_as_delivered_seqs():
    assert delivered_seqs({"messages": [1, "2", True, 3.0, 4]}) == {1, 4}
    assert delivered_seqs({"messages": "1"}) == set()
    assert delivered_seqs({"iteration": 2}) == set()


def test_a_message_is_stripped_and_empty_or_huge_ones_are_refused():
    assert message_data("  use tabs \n", "ana") == {"text": "use tabs", "sender": "ana"}
    with pytest.raises(InvalidMessage, match="empty"):
        message_data(" \n\t", "ana")
    with pytest.raises(InvalidMessage, match=f"at most {MAX_MESSAGE_CHARS}"):
        message_data("x" * (MAX_MESSAGE_CHARS + 1), "ana")


def test_the_section_lists_each_message_as_one_item_newest_last():
    lines = section(["Use tabs.", "Also:\nkeep the API\n  stable."])

    assert lines[0] == HEADING
    assert lines[-2:] == ["- Use tabs.", "- Also:\n  keep the API\n    stable."]


def test_no_messages_no_section():
    assert section([]) == []
