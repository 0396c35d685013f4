"""The fleet's errors: one base, so that a face can report any of them alike."""

from __future__ import annotations


class FleetError(Exception):
    """Fleet mode cannot go on; the message says why, for a user."""


class GitRemoteError(FleetError):
    """A git command on a loop's repository failed for a reason other than a fenced push."""
