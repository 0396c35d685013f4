"""Run the pinned Claude Code CLI hermetically against the mock Messages API."""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.agents.pinned import NODE_MODULES, JsonLinesRun, hermetic_path, npm_bin, session_root
from tests.mockapi import MockMessagesApi

#: The supported Claude Code versions' ends, both pinned in package.json: the newest as
#: ``@anthropic-ai/claude-code``, every older one under the npm alias ``claude-code-<version>``.
NEWEST_VERSION = "2.1.330"
OLDEST_VERSION = "2.1.100"
SUPPORTED_VERSIONS = (OLDEST_VERSION, NEWEST_VERSION)
BIN_ENV = "RALPHCTL_CLAUDE_BIN"
STREAM_JSON = ("-p", "--output-format", "stream-json", "--verbose")
INSTALL_HINT = (
    f"a pinned Claude Code CLI is missing (looked at ${BIN_ENV}, else node_modules):"
    " run `npm ci` in the repository root"
)


def package_dir(version: str) -> Path:
    """Where ``npm ci`` installs the pinned CLI of ``version``."""
    if version == NEWEST_VERSION:
        return NODE_MODULES / "@anthropic-ai" / "claude-code"
    return NODE_MODULES / f"claude-code-{version}"


def pinned_binary(version: str = NEWEST_VERSION) -> Path:
    """The ``claude`` executable of a pinned version, as its package.json names it (a native
    binary from 2.1.120 on, ``cli.js`` run by Node before). The shared ``node_modules/.bin``
    is not used: npm links only one of several packages that declare the same command."""
    return npm_bin(package_dir(version), "claude", "bin/claude.exe")


def claude_binary(version: str | None = None) -> Path | None:
    """The CLI of ``version``; without one ``$RALPHCTL_CLAUDE_BIN`` if set, else the newest
    pinned. None if it is not there."""
    configured = os.environ.get(BIN_ENV) if version is None else None
    binary = Path(configured) if configured else pinned_binary(version or NEWEST_VERSION)
    return binary if binary.is_file() and os.access(binary, os.X_OK) else None


def hermetic_env(base_url: str, home: Path) -> dict[str, str]:
    """A complete environment (not an overlay) that keeps the CLI off the network, out of
    the real home and away from a parent Claude session's variables. API errors are not
    retried; override ``CLAUDE_CODE_MAX_RETRIES`` for a run to see retries."""
    tmp = home / "tmp"
    tmp.mkdir(mode=0o700, parents=True, exist_ok=True)
    path = hermetic_path()
    return {
        "PATH": path,
        "HOME": str(home),
        "CLAUDE_CONFIG_DIR": str(home / ".claude"),
        "CLAUDE_CODE_TMPDIR": str(tmp),
        "ANTHROPIC_BASE_URL": base_url,
        "ANTHROPIC_API_KEY": "dummy",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_TELEMETRY": "1",
        "DISABLE_AUTOUPDATER": "1",
        "CLAUDE_CODE_MAX_RETRIES": "0",
    }


@dataclass(frozen=True)
class ClaudeRun(JsonLinesRun):
    """One finished ``claude -p`` process: its exit status and raw output."""

    def of_type(self, type_: str, subtype: str | None = None) -> list[dict[str, Any]]:
        return [
            e
            for e in self.events
            if e.get("type") == type_ and (subtype is None or e.get("subtype") == subtype)
        ]

    @property
    def init(self) -> dict[str, Any]:
        return self.of_type("system", "init")[0]

    @property
    def result(self) -> dict[str, Any]:
        """The final ``result`` line, which must be the last line of a normal run."""
        assert self.events[-1]["type"] == "result", self.stderr
        return self.events[-1]


@dataclass
class RealClaude:
    """The pinned CLI, a running mock, a temp project and the environment tying them up."""

    binary: Path
    server: MockMessagesApi
    project: Path
    home: Path
    env: dict[str, str]
    version: str = NEWEST_VERSION

    def run(
        self,
        prompt: str,
        *args: str,
        env: Mapping[str, str] | None = None,
        timeout: float = 60,
    ) -> ClaudeRun:
        """``claude -p --output-format stream-json --verbose ARGS`` with the prompt on stdin."""
        argv = [str(self.binary), *STREAM_JSON, *args]
        completed = subprocess.run(
            argv,
            input=prompt.encode(),
            cwd=self.project,
            env={**self.env, **(env or {})},
            capture_output=True,
            timeout=timeout,
            check=False,
        )
        return ClaudeRun(
            argv, completed.returncode, completed.stdout, completed.stderr.decode(errors="replace")
        )

    def transcript(self, session_id: str) -> Path:
        """Where the CLI writes this session's transcript JSONL (every character of the
        project path other than a letter or digit becomes ``-``)."""
        encoded = re.sub(r"[^A-Za-z0-9]", "-", str(self.project.resolve()))
        return self.home / ".claude" / "projects" / encoded / f"{session_id}.jsonl"


@contextmanager
def real_claude_session(
    binary: Path, root: Path | None = None, version: str = NEWEST_VERSION
) -> Iterator[RealClaude]:
    """A started mock plus a fresh home and project under ``root`` (a temp dir if None);
    ``version`` is the version of ``binary``.

    ``env`` also sets ``RALPHCTL_CLAUDE_BIN`` so that ralphctl run with it drives this CLI.
    """
    with session_root(root, "ralphctl-realcli-") as base, MockMessagesApi() as server:
        home, project = base / "home", base / "project"
        home.mkdir()
        project.mkdir()
        _require_outside_git(project)
        env = {**hermetic_env(server.base_url, home), BIN_ENV: str(binary)}
        yield RealClaude(binary, server, project, home, env, version)


def _require_outside_git(project: Path) -> None:
    """Inside a git work tree the CLI puts that repository's status into the prompt."""
    for folder in project.resolve().parents:
        if (folder / ".git").exists():
            raise RuntimeError(f"{project} is inside the git repository {folder}: use /tmp")
