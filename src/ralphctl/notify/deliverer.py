"""The deliverer: in the background of ``ralphctl run`` and ``ralphctl serve``, it follows the
events into the outbox and delivers what is due, on threads of its own with a database
connection of its own, so a slow or failing receiver never slows a loop.

Each delivery runs on its own worker thread (at most ``workers`` at once); a failed attempt is
tried again after an exponential back-off with jitter, until the channel's ``max_attempts``,
then the row is ``failed``. ``stop(flush_s)`` gives what is due a bounded last chance; the
rest stays in the outbox for the next deliverer (a row claimed by a worker still running at
the end waits for its lease to expire).

The store, SQLAlchemy and the HTTP client are imported on the deliverer's own thread, after
``start_delay_s`` (``ralphctl run`` starts one beside its first agent: ``during_run``).
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

from ralphctl.domain.notify_events import notification_name
from ralphctl.store.errors import StoreError

if TYPE_CHECKING:
    from ralphctl.notify.channels import Outcome
    from ralphctl.notify.config import NotifySettings
    from ralphctl.notify.outbox import LoopInfo, Notification
    from ralphctl.store.records import EventRecord
    from ralphctl.store.repository import Store

log = logging.getLogger(__name__)

POLL_S = 0.5
LEASE_S = 60.0  # longer than any channel's timeout (at most 600 s is allowed: see below)
SETTINGS_TTL_S = 5.0
FLUSH_S = 2.0  # what ``ralphctl run`` and ``serve`` give the deliveries due when they end


@dataclass(frozen=True, slots=True)
class Backoff:
    """The pause before attempt ``n + 1``: ``base_s * 2**(n - 1)``, at most ``cap_s``, times a
    random factor in [0.5, 1] (so that many failed deliveries do not retry in step)."""

    base_s: float = 2.0
    cap_s: float = 300.0

    def delay(self, attempts: int) -> float:
        pause: float = min(self.cap_s, self.base_s * 2.0 ** max(attempts - 1, 0))
        return pause * random.uniform(0.5, 1.0)


def _resolve(workdir: Path) -> NotifySettings:
    from ralphctl.settings import resolve_notify

    return resolve_notify(workdir)


class Deliverer:
    """Follows and delivers the outbox of the database ``open_store`` opens."""

    def __init__(
        self,
        open_store: Callable[[], Store],
        *,
        resolve: Callable[[Path], NotifySettings] = _resolve,
        poll_s: float = POLL_S,
        lease_s: float = LEASE_S,
        backoff: Backoff | None = None,
        workers: int = 4,
        start_delay_s: float = 0.0,
    ) -> None:
        self._open_store = open_store
        self._resolve = resolve
        self._poll_s = poll_s
        self._lease_s = lease_s
        self._backoff = backoff or Backoff()
        self._start_delay_s = start_delay_s
        self._capacity = workers
        self._free = workers
        self._lock = threading.Lock()
        self._settings: dict[str, tuple[float, NotifySettings]] = {}
        self._wake = threading.Event()
        self._stopping = False
        self._flush_until = 0.0
        self._thread: threading.Thread | None = None

    # -- the background thread ----------------------------------------------------------------

    def start(self) -> Deliverer:
        self._thread = threading.Thread(target=self._run, name="ralphctl-notify", daemon=True)
        self._thread.start()
        return self

    def stop(self, flush_s: float = 0.0) -> None:
        """Stop after at most ``flush_s`` more seconds of delivering what is due."""
        self._flush_until = time.monotonic() + flush_s
        self._stopping = True
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=flush_s + 0.5)

    def _run(self) -> None:
        if self._wake.wait(self._start_delay_s):  # stopped before it began: a flush still runs
            self._wake.clear()
        try:
            store = self._open_store()
        except StoreError as exc:
            log.warning("notifications are not delivered: %s", exc)
            return
        try:
            while not (self._stopping and time.monotonic() >= self._flush_until):
                busy = self._pass(store, threaded=True)
                if self._stopping and not busy:
                    break
                self._wake.wait(self._poll_s if not self._stopping else 0.05)
                self._wake.clear()
        finally:
            self._wait_workers()
            store.close()

    def _wait_workers(self) -> None:
        """Give running deliveries until the flush deadline to record their outcome."""
        while self._busy_workers() and time.monotonic() < self._flush_until:
            time.sleep(0.02)

    def _busy_workers(self) -> bool:
        with self._lock:
            return self._free < self._capacity

    # -- one pass -------------------------------------------------------------------------------

    def run_once(self, store: Store) -> int:
        """Follow the events and deliver what is due, here and now; the number attempted."""
        return self._pass(store, threaded=False)

    def _pass(self, store: Store, *, threaded: bool) -> int:
        """Follow, claim what is due and deliver it (on workers when ``threaded``); how many
        deliveries this started or are still running (0: idle)."""
        from ralphctl.notify import outbox

        try:
            outbox.follow(store, self._route)
            with self._lock:
                free = self._free if threaded else self._capacity
            if free <= 0:
                return 1
            token, due = outbox.claim(store, limit=free, lease_s=self._lease_s)
        except StoreError as exc:
            log.warning("notifications: %s", exc)
            return 0
        for notification, workdir in due:
            if threaded:
                self._start_worker(store, notification, workdir, token)
            else:
                self._deliver(store, notification, workdir, token)
        return len(due) + (self._capacity - self._free if threaded else 0)

    def _start_worker(
        self, store: Store, notification: Notification, workdir: str, token: str
    ) -> None:
        with self._lock:
            self._free -= 1

        def work() -> None:
            try:
                self._deliver(store, notification, workdir, token)
            finally:
                with self._lock:
                    self._free += 1
                self._wake.set()

        threading.Thread(target=work, name="ralphctl-notify-send", daemon=True).start()

    def _deliver(self, store: Store, notification: Notification, workdir: str, token: str) -> None:
        import orjson

        from ralphctl.notify import outbox
        from ralphctl.notify.channels import Outcome, send

        channel = self._settings_of(workdir).channel(notification.channel)
        if channel is None:
            detail = f"channel {notification.channel!r} is no longer configured"
            outcome = Outcome(False, detail)
            self._record(store, notification, token, outcome, outbox.FAILED)
            return
        body = orjson.dumps(notification.payload)
        outcome = send(channel, body, event=notification.event, delivery=str(notification.id))
        if outcome.skipped:
            status, retry = outbox.SKIPPED, None
        elif outcome.ok:
            status, retry = outbox.DELIVERED, None
        elif notification.attempts + 1 >= channel.max_attempts:
            status, retry = outbox.FAILED, None
        else:
            pause = self._backoff.delay(notification.attempts + 1)
            status, retry = outbox.PENDING, datetime.now(UTC) + timedelta(seconds=pause)
        self._record(store, notification, token, outcome, status, retry)

    def _record(
        self,
        store: Store,
        notification: Notification,
        token: str,
        outcome: Outcome,
        status: str,
        retry: datetime | None = None,
    ) -> None:
        from ralphctl.notify import outbox

        try:
            kept = outbox.record(
                store, notification, token, outcome.to_json(), status=status, retry_at=retry
            )
        except StoreError as exc:
            log.warning("notification %s: cannot record its delivery: %s", notification.id, exc)
            return
        if not kept:
            log.warning("notification %s: its claim expired during delivery", notification.id)

    # -- routing ------------------------------------------------------------------------------

    def _route(self, event: EventRecord, loop: LoopInfo) -> list[tuple[str, str]]:
        name = notification_name(event.event_type, event.data)
        chosen = loop.config.get("notify")
        loop_events = None if chosen is None else tuple(chosen)
        channels = self._settings_of(loop.workdir).channels_for(name, loop_events)
        return [(name, channel.key) for channel in channels]

    def _settings_of(self, workdir: str) -> NotifySettings:
        """The work dir's notification settings, read again at most every few seconds."""
        now = time.monotonic()
        with self._lock:
            cached = self._settings.get(workdir)
        if cached is not None and now - cached[0] < SETTINGS_TTL_S:
            return cached[1]
        try:
            settings = self._resolve(Path(workdir))
        except ValueError as exc:  # an invalid settings file: said once per reading
            from ralphctl.notify.config import NotifySettings

            log.warning("notifications of loops in %s: %s", workdir, exc)
            settings = NotifySettings()
        with self._lock:
            self._settings[workdir] = (now, settings)
        return settings
