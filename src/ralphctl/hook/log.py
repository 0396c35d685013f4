"""The hook's warnings: one line on stderr, and in a bounded ``.ralph/hook.log``.

The log is written only into a ``.ralph`` that already exists as a real directory (a loop
was armed there): a warning never creates ``.ralph`` in whatever directory a Stop names.
"""

from __future__ import annotations

import os
import sys
import time

from ralphctl.hook.clock import iso
from ralphctl.hook.paths import existing_ralph_dir
from ralphctl.hook.regular import open_regular

LOG_NAME = "hook.log"
#: The log is rotated once (to hook.log.1) when it grows past this.
LOG_LIMIT_BYTES = 256 * 1024
PREFIX = "ralphctl hook: "


def warn(message: str, project: str | None = None) -> None:
    """Report a problem without ever raising: a warning must not break the hook."""
    line = PREFIX + " ".join(message.split())
    try:
        sys.stderr.write(line + "\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass
    directory = None if project is None else existing_ralph_dir(project)
    if directory is None:
        return
    try:
        _append(os.path.join(directory, LOG_NAME), f"{iso(time.time())} {line}\n")
    except OSError:
        pass


def _append(path: str, line: str) -> None:
    try:
        if os.stat(path).st_size > LOG_LIMIT_BYTES:
            os.replace(path, path + ".1")
    except FileNotFoundError:
        pass
    fd = open_regular(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW)
    try:
        os.write(fd, line.encode("utf-8", "replace"))
    finally:
        os.close(fd)
