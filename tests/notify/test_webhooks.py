"""Webhook deliveries against a local receiver that fails, times out, then recovers."""

from __future__ import annotations

import hashlib
import hmac
import json
import time

import pytest

from ralphctl.notify import outbox
from ralphctl.notify.config import Webhook
from ralphctl.store.records import LoopRecord
from ralphctl.store.repository import Store
from tests.notify.conftest import deliverer
from tests.notify.receiver import receiver

SECRET = "s3cret"


def deliver_until_settled(store: Store, hook: Webhook, seconds: float = 10.0) -> None:
    """Run deliverer passes until nothing is pending (retries wait their back-off)."""
    worker = deliverer(store, hook)
    deadline = time.monotonic() + seconds
    with Store.open(store.url) as own:
        while time.monotonic() < deadline:
            worker.run_once(own)
            if not outbox.recent(own, status=outbox.PENDING):
                return
            time.sleep(0.05)
    raise AssertionError("deliveries still pending")


def test_a_failing_then_slow_receiver_gets_the_event_once_signed(
    store: Store, loop: LoopRecord
) -> None:
    with receiver(500, 2.0, 200) as hook_server:
        hook = Webhook(hook_server.url, secret=SECRET, timeout_s=0.5)
        stored = store.append_event(loop.id, "completed", {"reason": "done"})

        deliver_until_settled(store, hook)

    (accepted,) = hook_server.accepted
    assert len(hook_server.received) == 3
    body = accepted.body
    expected = "sha256=" + hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()
    assert accepted.headers["X-Ralphctl-Signature"] == expected
    assert accepted.headers["X-Ralphctl-Event"] == "completed"
    payload = json.loads(body)
    assert payload["seq"] == stored.seq
    assert payload["event"] == "completed"
    assert payload["loop"] == {"id": loop.id, "name": "nightly"}
    assert payload["data"] == {"reason": "done"}
    (notification,) = outbox.recent(store)
    assert accepted.headers["X-Ralphctl-Delivery"] == str(notification.id)
    assert (notification.status, notification.attempts) == ("delivered", 3)
    details = [attempt["detail"] for attempt in notification.outcomes]
    assert details == ["HTTP 500 Internal Server Error", "no answer within 0.5s", "HTTP 200"]


def test_a_receiver_that_never_recovers_fails_after_max_attempts(
    store: Store, loop: LoopRecord
) -> None:
    with receiver(503) as hook_server:
        hook = Webhook(hook_server.url, max_attempts=3)
        store.append_event(loop.id, "failed", {})

        deliver_until_settled(store, hook)

    (notification,) = outbox.recent(store)
    assert (notification.status, notification.attempts) == ("failed", 3)
    assert notification.last_error == "HTTP 503 Service Unavailable"
    assert len(hook_server.received) == 3


def test_a_secret_from_the_environment_signs_and_a_missing_one_is_an_error(
    store: Store, loop: LoopRecord, monkeypatch: pytest.MonkeyPatch
) -> None:
    with receiver(200) as hook_server:
        hook = Webhook(hook_server.url, secret_env="HOOK_SECRET", max_attempts=1)
        store.append_event(loop.id, "completed", {})
        monkeypatch.delenv("HOOK_SECRET", raising=False)
        deliver_until_settled(store, hook)
        monkeypatch.setenv("HOOK_SECRET", SECRET)
        store.append_event(loop.id, "completed", {})
        deliver_until_settled(store, hook)

    newest, oldest = outbox.recent(store)
    assert oldest.status == "failed"
    assert oldest.last_error == "environment variable HOOK_SECRET (the secret) is not set"
    assert newest.status == "delivered"
    (accepted,) = hook_server.accepted
    signature = hmac.new(SECRET.encode(), accepted.body, hashlib.sha256).hexdigest()
    assert accepted.headers["X-Ralphctl-Signature"] == f"sha256={signature}"


def test_events_no_channel_chose_are_not_enqueued(store: Store, loop: LoopRecord) -> None:
    hook = Webhook("http://127.0.0.1:9/hook", events=("completed",))
    store.append_events(loop.id, [("iteration_completed", {}), ("failed", {})])

    deliverer(store, hook).run_once(store)

    assert outbox.recent(store) == []
