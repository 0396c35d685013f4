"""How hard the reliability tests push: bounded in `make test`, longer in `make reliability`.

`make reliability` sets ``RALPHCTL_RELIABILITY=long`` and runs the tests marked
``reliability``; each reads its counts (kills, fuzzed inputs, parallel Stops, examples)
through ``scaled`` so that one variable switches them all.
"""

from __future__ import annotations

import os

ENV = "RALPHCTL_RELIABILITY"
LONG = "long"


def is_long() -> bool:
    """Whether this is the longer run (``RALPHCTL_RELIABILITY=long``)."""
    value = os.environ.get(ENV, "")
    if value not in ("", LONG):
        raise ValueError(f"{ENV}={value!r}: use {LONG!r} or leave it unset")
    return value == LONG


def scaled(bounded: int, long: int) -> int:
    """``bounded`` in `make test`, ``long`` in `make reliability`."""
    return long if is_long() else bounded
