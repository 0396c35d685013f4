"""Where ``ralphctl serve`` logs: stderr and a rotating file, one format, tokens blanked.

The ``ralphctl`` loggers (loop lifecycle, store failures) and uvicorn's share both handlers.
"""

from __future__ import annotations

import logging
import os
import sys
from logging.handlers import RotatingFileHandler
from pathlib import Path

from ralphctl.server.auth import RedactTokens

LEVELS = ("debug", "info", "warning", "error")
LOG_FILE = "serve.log"
MAX_BYTES = 10 * 2**20  # per file; the file is rotated beyond
BACKUPS = 5  # serve.log.1 … serve.log.5 are kept
FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
LOGGERS = ("ralphctl", "uvicorn")


class LogFileError(OSError):
    """The log file cannot be opened for appending."""


def default_log_file() -> Path:
    """``serve.log`` in the user's log dir (``~/.local/state/ralphctl/log`` on Linux), or
    beside the token and address when ``RALPHCTL_SERVER_DIR`` sets them apart (tests, several
    servers)."""
    explicit = os.environ.get("RALPHCTL_SERVER_DIR")
    if explicit:
        return Path(explicit) / LOG_FILE
    from platformdirs import user_log_dir

    return Path(user_log_dir("ralphctl")) / LOG_FILE


def configure_logging(level: str, file: Path) -> None:
    """Send ``level`` and above of ralphctl and uvicorn to stderr and to ``file`` (rotated)."""
    try:
        file.parent.mkdir(parents=True, exist_ok=True)
        to_file = RotatingFileHandler(
            file, maxBytes=MAX_BYTES, backupCount=BACKUPS, encoding="utf-8"
        )
    except OSError as exc:
        raise LogFileError(f"cannot write the log file {file}: {exc.strerror or exc}") from None
    formatter = logging.Formatter(FORMAT)
    handlers: list[logging.Handler] = [logging.StreamHandler(sys.stderr), to_file]
    for handler in handlers:
        handler.setFormatter(formatter)
        handler.addFilter(RedactTokens())
    for name in LOGGERS:
        logger = logging.getLogger(name)
        logger.handlers = list(handlers)
        logger.setLevel(level.upper())
        logger.propagate = False
