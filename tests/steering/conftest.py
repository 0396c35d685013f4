"""Fixtures of the steering tests: a store and a work dir of the test's own, and an app with a
real loop manager (no user config, a server dir of the test's own)."""

from __future__ import annotations

from tests.engine.conftest import db, workdir
from tests.server.conftest import client, isolated, sqlite_store

__all__ = ["client", "db", "isolated", "sqlite_store", "workdir"]
