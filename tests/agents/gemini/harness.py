"""Run the pinned Gemini CLI hermetically against the mock Gemini API.

Each session gets its own ``HOME`` (never the user's) whose ``.gemini/settings.json`` selects
API-key auth (without it a custom base URL makes the CLI exit 41) and allows one attempt per
request (``general.maxAttempts``: by default a 429 or 5xx is retried up to 10 times, 5 s
apart and doubling up to 30 s). ``GOOGLE_GEMINI_BASE_URL`` points the CLI at the mock; the
mock answers the CLI's model-routing call with a valid routing decision (``ROUTER_ANSWER``).
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.agents.pinned import (
    NODE_MODULES,
    JsonLinesRun,
    configured_or_pinned,
    hermetic_path,
    missing_hint,
    npm_bin,
    session_root,
)
from tests.mockapi import MockApi, RecordedRequest, Reply, Usage
from tests.mockapi.gemini import GeminiApi

PACKAGE_DIR = NODE_MODULES / "@google" / "gemini-cli"
VERSION = "0.61.0"
BIN_ENV = "RALPHCTL_GEMINI_BIN"
STREAM_JSON = ("--output-format", "stream-json", "--skip-trust")
INSTALL_HINT = missing_hint("Gemini CLI", VERSION, BIN_ENV)
#: What the CLI's helper calls get: a routing decision (``complexity_*``) that the model
#: router accepts. Without a valid one it retries the call for seconds before it goes on.
ROUTER_ANSWER = Reply(
    json.dumps({"complexity_reasoning": "A scripted task.", "complexity_score": 10}),
    Usage(input_tokens=0, output_tokens=0),
)
SETTINGS = {
    "security": {"auth": {"selectedType": "gemini-api-key"}},
    "general": {"maxAttempts": 1},
    "privacy": {"usageStatisticsEnabled": False},  # no usage reports sent to Google
}


def pinned_binary() -> Path:
    """The ``gemini`` script ``npm ci`` installs, as its package.json names it."""
    return npm_bin(PACKAGE_DIR, "gemini", "bundle/gemini.js")


def gemini_binary() -> Path | None:
    """``$RALPHCTL_GEMINI_BIN`` if set, else the pinned CLI; None if it is not there."""
    return configured_or_pinned(BIN_ENV, pinned_binary())


def hermetic_env(base_url: str, home: Path) -> dict[str, str]:
    """A complete environment (not an overlay): the CLI sees the temp home and the mock only.
    ``GEMINI_CLI_NO_RELAUNCH`` is what the adapter sets too (one Node process, not two)."""
    path = hermetic_path()
    return {
        "PATH": path,
        "HOME": str(home),
        "GEMINI_API_KEY": "dummy",
        "GOOGLE_GEMINI_BASE_URL": base_url,
        "GEMINI_CLI_NO_RELAUNCH": "true",
        "GEMINI_TELEMETRY_ENABLED": "false",
        "NO_COLOR": "1",
        "TZ": "UTC",
        "TMPDIR": str(home / "tmp"),
        "XDG_DATA_HOME": str(home / ".local" / "share"),
    }


@dataclass(frozen=True)
class GeminiRun(JsonLinesRun):
    """One finished ``gemini --output-format stream-json`` process."""

    @property
    def result(self) -> dict[str, Any]:
        """The closing ``result`` line, which must be the last one."""
        assert self.events[-1]["type"] == "result", self.stderr
        return self.events[-1]


@dataclass
class RealGemini:
    """The pinned CLI, a running mock, a temp home and project, and the environment tying
    them together (``env`` also sets ``RALPHCTL_GEMINI_BIN`` for ralphctl)."""

    binary: Path
    server: MockApi
    project: Path
    home: Path
    env: dict[str, str]

    def run(
        self, prompt: str, *args: str, env: Mapping[str, str] | None = None, timeout: float = 60
    ) -> GeminiRun:
        """``gemini --output-format stream-json --skip-trust ARGS``, the prompt on stdin."""
        argv = [str(self.binary), *STREAM_JSON, *args]
        done = subprocess.run(
            argv,
            input=prompt.encode(),
            cwd=self.project,
            env={**self.env, **(env or {})},
            capture_output=True,
            timeout=timeout,
            check=False,
        )
        return GeminiRun(argv, done.returncode, done.stdout, done.stderr.decode(errors="replace"))

    @property
    def main_requests(self) -> list[RecordedRequest]:
        return self.server.main_requests


def gemini_mock() -> MockApi:
    """A mock Gemini API (not started) whose helper calls get ``ROUTER_ANSWER``."""
    server = MockApi(GeminiApi())
    server.script.side_answer = ROUTER_ANSWER
    return server


@contextmanager
def real_gemini_session(binary: Path, root: Path | None = None) -> Iterator[RealGemini]:
    """A started mock plus a fresh home and project under ``root`` (a temp dir if None)."""
    with session_root(root, "ralphctl-gemini-") as base, gemini_mock() as server:
        yield gemini_in(binary, server, base)


def gemini_in(binary: Path, server: MockApi, base: Path) -> RealGemini:
    """A fresh home and project under ``base`` for the CLI, talking to a running ``server``."""
    home, project = base / "home", base / "project"
    (home / ".gemini").mkdir(parents=True)
    (home / "tmp").mkdir()
    project.mkdir()
    (home / ".gemini" / "settings.json").write_text(json.dumps(SETTINGS))
    env = {**hermetic_env(server.base_url, home), BIN_ENV: str(binary)}
    return RealGemini(binary, server, project, home, env)
