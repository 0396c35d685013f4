"""The outbox: each (event, channel) enqueued once, claimed by one deliverer at a time.

Runs on SQLite and on PostgreSQL (the ``store`` fixture)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from ralphctl.notify import outbox
from ralphctl.notify.config import Command, Webhook
from ralphctl.notify.outbox import LoopInfo
from ralphctl.store.records import EventRecord, LoopRecord
from ralphctl.store.repository import Store

HOOK = Webhook("http://127.0.0.1:9/hook")
LOG = Command("cat >> /dev/null")


def to_both(event: EventRecord, _loop: LoopInfo) -> list[tuple[str, str]]:
    return [(event.event_type, HOOK.key), (event.event_type, LOG.key)]


def test_each_event_is_enqueued_for_each_channel_its_route_names(
    store: Store, loop: LoopRecord
) -> None:
    store.append_event(loop.id, "failed", {"reason": "boom"})

    assert outbox.follow(store, to_both) == 2
    assert outbox.follow(store, to_both) == 0
    rows = outbox.recent(store)
    assert {(n.event, n.channel, n.status) for n in rows} == {
        ("failed", HOOK.key, "pending"),
        ("failed", LOG.key, "pending"),
    }
    assert rows[0].payload["loop"] == {"id": loop.id, "name": "nightly"}
    assert rows[0].payload["data"] == {"reason": "boom"}


def test_followers_that_read_the_same_events_enqueue_each_once(
    store: Store, loop: LoopRecord
) -> None:
    outbox.follow(store, to_both)
    store.append_events(loop.id, [("completed", {}), ("blocked", {"reason": "why"})])
    other = Store.open(store.url)  # another process's connection
    try:
        # both read before either writes: the rows still exist once
        made = outbox.follow(store, to_both) + outbox.follow(other, to_both)
        made += outbox.follow(other, to_both)
    finally:
        other.close()

    assert made == 4
    assert len(outbox.recent(store)) == 4


def test_a_claimed_row_is_not_claimed_again_until_its_lease_expires(
    store: Store, loop: LoopRecord
) -> None:
    outbox.follow(store, to_both)
    store.append_event(loop.id, "completed", {})
    outbox.follow(store, to_both)
    now = datetime.now(UTC)

    first_token, first = outbox.claim(store, limit=10, lease_s=60, now=now)
    _, second = outbox.claim(store, limit=10, lease_s=60, now=now)
    _, after_lease = outbox.claim(store, limit=10, lease_s=60, now=now + timedelta(seconds=61))

    assert len(first) == 2
    assert second == []
    assert {n.id for n, _ in after_lease} == {n.id for n, _ in first}
    assert first[0][1] == loop.workdir
    # the first deliverer lost its claim: its late outcome is not written
    notification = first[0][0]
    outcome = {"ok": True, "detail": "HTTP 200"}
    assert not outbox.record(store, notification, first_token, outcome, status=outbox.DELIVERED)


def test_an_outcome_is_recorded_with_the_attempt(store: Store, loop: LoopRecord) -> None:
    outbox.follow(store, to_both)
    store.append_event(loop.id, "completed", {})
    outbox.follow(store, to_both)
    token, claimed = outbox.claim(store, limit=1, lease_s=60)
    notification = claimed[0][0]
    retry = datetime.now(UTC) + timedelta(seconds=30)

    outcome = {"ok": False, "detail": "HTTP 500 Internal Server Error"}
    kept = outbox.record(store, notification, token, outcome, status="pending", retry_at=retry)

    (stored,) = [n for n in outbox.recent(store) if n.id == notification.id]
    assert kept
    assert (stored.status, stored.attempts) == ("pending", 1)
    assert stored.last_error == "HTTP 500 Internal Server Error"
    assert stored.outcomes[0]["detail"] == "HTTP 500 Internal Server Error"
    assert abs((stored.next_attempt_at - retry).total_seconds()) < 0.01
    _, due_now = outbox.claim(store, limit=10, lease_s=60)
    assert notification.id not in {n.id for n, _ in due_now}  # not before its retry time
