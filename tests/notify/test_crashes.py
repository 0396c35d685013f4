"""Deliveries survive a deliverer killed mid-delivery, and two deliverers on one database
deliver each notification once (SQLite and PostgreSQL)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter

from ralphctl.notify import outbox
from ralphctl.notify.config import Webhook
from ralphctl.store.records import LoopRecord
from ralphctl.store.repository import Store
from tests.notify.conftest import deliverer
from tests.notify.receiver import receiver

#: A deliverer in a process of its own, stuck in its first delivery (a 30 s timeout, longer
#: than its 1 s lease), until it is killed.
CHILD = """
import sys, time
from functools import partial
from ralphctl.notify.config import NotifySettings, Webhook
from ralphctl.notify.deliverer import Deliverer
from ralphctl.store.repository import Store

url, hook = sys.argv[1], sys.argv[2]
settings = NotifySettings((Webhook(hook, timeout_s=30),))
Deliverer(partial(Store.open, url), resolve=lambda _: settings, poll_s=0.05, lease_s=1.0).start()
time.sleep(60)
"""


def wait_for(condition, seconds: float = 10.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def test_a_deliverer_killed_mid_delivery_leaves_it_to_the_next_one_delivered_once(
    store: Store, loop: LoopRecord
) -> None:
    with receiver(30.0, 200) as hook_server:
        hook = Webhook(hook_server.url)
        store.append_event(loop.id, "completed", {})
        child = subprocess.Popen([sys.executable, "-c", CHILD, store.url, hook_server.url])
        try:
            wait_for(lambda: len(hook_server.received) == 1)
        finally:
            os.kill(child.pid, signal.SIGKILL)
            child.wait()
        successor = deliverer(store, hook).start()
        try:
            wait_for(lambda: outbox.recent(store, status=outbox.DELIVERED) != [])
        finally:
            successor.stop()

    assert len(hook_server.accepted) == 1
    (notification,) = outbox.recent(store)
    assert notification.attempts == 1  # the killed deliverer recorded nothing


def test_two_deliverers_on_one_database_deliver_each_notification_once(
    store: Store, loop: LoopRecord
) -> None:
    with receiver(200) as hook_server:
        hook = Webhook(hook_server.url)
        stored = store.append_events(loop.id, [("completed", {"n": n}) for n in range(30)])
        pair = [deliverer(store, hook).start(), deliverer(store, hook).start()]
        try:
            wait_for(lambda: len(outbox.recent(store, status=outbox.DELIVERED)) == 30)
        finally:
            for one in pair:
                one.stop()

    seqs = Counter(json.loads(got.body)["seq"] for got in hook_server.accepted)
    assert seqs == Counter(event.seq for event in stored)
    assert all(n.attempts == 1 for n in outbox.recent(store))
