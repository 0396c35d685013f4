"""The schema's newest migration, importable without SQLAlchemy (``ralphctl run`` checks it
before its store's hot path, ``store.sqlite_direct``, writes a row)."""

from __future__ import annotations

#: The newest migration's revision: bump it with each new migration (a test checks).
HEAD_REVISION = "0007"
