"""Fixtures of the notification tests: a stored loop, and settings handed to the deliverer."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from pathlib import Path

import pytest

from ralphctl.notify.config import Channel, NotifySettings
from ralphctl.notify.deliverer import Backoff, Deliverer
from ralphctl.store.records import LoopRecord
from ralphctl.store.repository import Store
from tests.store.factories import new_loop

#: Retries within a test's patience.
QUICK = Backoff(base_s=0.05, cap_s=0.2)


def settings_of(*channels: Channel) -> Callable[[Path], NotifySettings]:
    """A ``resolve`` for the deliverer: these channels, for every work dir."""
    settings = NotifySettings(channels)
    return lambda _workdir: settings


def deliverer(store: Store, *channels: Channel, **options: object) -> Deliverer:
    """A deliverer of ``store``'s database (on a connection of its own) to ``channels``."""
    defaults: dict[str, object] = {"poll_s": 0.05, "backoff": QUICK}
    return Deliverer(
        partial(Store.open, store.url),
        resolve=settings_of(*channels),
        **(defaults | options),  # type: ignore[arg-type]
    )


@pytest.fixture
def loop(store: Store) -> LoopRecord:
    return store.create_loop(new_loop("loop-notify", name="nightly"))
