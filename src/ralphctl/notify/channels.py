"""Sending one notification to one channel; each returns its ``Outcome``, never raises.

- Webhook: ``POST`` of the JSON body, with ``X-Ralphctl-Event``, ``X-Ralphctl-Delivery`` and,
  when the hook has a secret, ``X-Ralphctl-Signature: sha256=<hex HMAC-SHA256 of the body>``;
  any 2xx status is delivered, anything else (or no answer within the timeout) an error.
- Command: run by ``/bin/sh -c`` with the JSON on its stdin, in its own process group (killed
  whole at the timeout); exit status 0 is delivered.
- Desktop: ``notify-send`` with a title and one line; skipped (not an error) where missing.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import logging
import os
import shutil
import signal
import subprocess
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Any

from ralphctl.notify.config import Channel, Command, Desktop, Webhook

log = logging.getLogger(__name__)

SIGNATURE_HEADER = "X-Ralphctl-Signature"
EVENT_HEADER = "X-Ralphctl-Event"
DELIVERY_HEADER = "X-Ralphctl-Delivery"
USER_AGENT = "ralphctl-notify"
DESKTOP_TIMEOUT_S = 10.0
_DETAIL_CHARS = 300


@dataclass(frozen=True, slots=True)
class Outcome:
    ok: bool
    detail: str
    duration_ms: int = 0
    skipped: bool = False

    def to_json(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "detail": self.detail,
            "duration_ms": self.duration_ms,
            "skipped": self.skipped,
        }


def signature(secret: str, body: bytes) -> str:
    """The value of ``X-Ralphctl-Signature`` for ``body``."""
    digest = hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    return f"sha256={digest}"


def send(channel: Channel, body: bytes, *, event: str, delivery: str) -> Outcome:
    """Send ``body`` (the notification's JSON) to ``channel``."""
    started = time.monotonic()
    if isinstance(channel, Webhook):
        ok, detail, skipped = _webhook(channel, body, event, delivery)
    elif isinstance(channel, Command):
        ok, detail, skipped = _command(channel, body)
    else:
        ok, detail, skipped = _desktop(channel, body, event)
    took = int((time.monotonic() - started) * 1000)
    return Outcome(ok, detail[:_DETAIL_CHARS], took, skipped)


def _webhook(hook: Webhook, body: bytes, event: str, delivery: str) -> tuple[bool, str, bool]:
    headers = {
        "Content-Type": "application/json",
        "User-Agent": USER_AGENT,
        EVENT_HEADER: event,
        DELIVERY_HEADER: delivery,
    }
    secret = hook.secret
    if hook.secret_env is not None:
        secret = os.environ.get(hook.secret_env)
        if not secret:
            return False, f"environment variable {hook.secret_env} (the secret) is not set", False
    if secret:
        headers[SIGNATURE_HEADER] = signature(secret, body)
    request = urllib.request.Request(hook.url, data=body, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=hook.timeout_s) as response:
            return True, f"HTTP {response.status}", False
    except urllib.error.HTTPError as exc:
        return False, f"HTTP {exc.code} {exc.reason}", False
    except TimeoutError:
        return False, f"no answer within {hook.timeout_s:g}s", False
    except urllib.error.URLError as exc:
        reason = exc.reason
        if isinstance(reason, TimeoutError):
            return False, f"no answer within {hook.timeout_s:g}s", False
        return False, f"cannot reach {hook.url}: {reason}", False
    except OSError as exc:
        return False, f"cannot reach {hook.url}: {exc}", False


def _command(command: Command, body: bytes) -> tuple[bool, str, bool]:
    try:
        process = subprocess.Popen(
            ["/bin/sh", "-c", command.command],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
    except OSError as exc:
        return False, f"cannot run the command: {exc}", False
    try:
        _, stderr = process.communicate(body, timeout=command.timeout_s)
    except subprocess.TimeoutExpired:
        _kill_group(process)
        return False, f"timed out after {command.timeout_s:g}s (killed)", False
    if process.returncode == 0:
        return True, "exit status 0", False
    said = stderr.decode(errors="replace").strip().splitlines()
    tail = f": {said[-1]}" if said else ""
    return False, f"exit status {process.returncode}{tail}", False


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    process.communicate()


def _desktop(_desktop: Desktop, body: bytes, event: str) -> tuple[bool, str, bool]:
    program = shutil.which("notify-send")
    if program is None:
        log.debug("desktop notification skipped: notify-send not found")
        return True, "skipped: notify-send not found", True
    summary = _summary(body)
    try:
        done = subprocess.run(
            [program, "--app-name=ralphctl", f"ralphctl: {event}", summary],
            capture_output=True,
            timeout=DESKTOP_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return False, f"notify-send failed: {exc}", False
    if done.returncode != 0:
        said = done.stderr.decode(errors="replace").strip()
        return False, f"notify-send exit status {done.returncode}: {said}", False
    return True, "shown", False


def _summary(body: bytes) -> str:
    """One line for a person: the loop's name and what the event says."""
    import json

    payload = json.loads(body)
    loop = (payload.get("loop") or {}).get("name") or "-"
    data = payload.get("data") or {}
    said = data.get("reason") or data.get("message") or data.get("detail") or ""
    if payload.get("event") == "budget_warning":
        said = f"{data.get('budget')} budget {round(100 * data.get('fraction', 0))}% spent"
    if payload.get("event") == "parked" and data.get("until"):
        said = f"parked until {data['until']}"
    return f"loop {loop}: {said}".strip().rstrip(":")
