"""What the store raises: messages are meant for the user, not a traceback."""

from __future__ import annotations


class StoreError(RuntimeError):
    """The database cannot be opened, read or written; the message says why."""


class LoopNotFound(StoreError):
    """No loop has this id (or the prefix matches several)."""
