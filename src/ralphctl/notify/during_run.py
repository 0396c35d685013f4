"""The deliverer of a foreground ``ralphctl run``: started only where a settings file has
``[notify]``, so that a run without notifications imports none of them (start-up budget)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ralphctl.notify.deliverer import Deliverer
    from ralphctl.store.repository import Store

START_DELAY_S = 1.0  # the run starts its first agent meanwhile
FLUSH_S = 2.0  # what the run gives the deliveries still due when it ends


def deliver_during_run(open_store: Callable[[], Store], workdir: Path) -> Deliverer | None:
    """A started deliverer of the database ``open_store`` opens; None when no channel is
    configured for ``workdir`` (nothing to deliver, nothing started)."""
    from ralphctl.settings import notify_configured, resolve_notify

    if not notify_configured(workdir) or not resolve_notify(workdir).channels:
        return None
    from ralphctl.notify.deliverer import Deliverer

    return Deliverer(open_store, start_delay_s=START_DELAY_S).start()
