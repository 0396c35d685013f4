"""Run the pinned OpenCode CLI hermetically against the mock Chat Completions API.

Each session gets its own ``HOME`` and XDG dirs (config, data, state, cache: never the
user's) and an ``opencode.json`` (``$OPENCODE_CONFIG``) declaring the mock as a custom
OpenAI-compatible provider with prices, so that opencode reports a cost. The mock answers
429s and 5xx with ``retry-after: 0``: opencode's five retries then take no time. Models are
not fetched, nothing is shared, no LSP is downloaded. ``opencode_server`` runs
``opencode serve`` instead, whose sessions outlive their idle (as in the TUI).
"""

from __future__ import annotations

import json
import re
import subprocess
import urllib.request
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from tests.agents.pinned import (
    REPO_ROOT,
    JsonLinesRun,
    configured_or_pinned,
    hermetic_path,
    npm_bin,
)
from tests.mockapi import MockApi, Usage
from tests.mockapi.openai_chat import OpenAIChat

#: Where scripts/ensure-opencode installs the pinned CLI (``npm ci`` cannot: see the script).
PACKAGE_DIR = REPO_ROOT / ".agents" / "opencode" / "node_modules" / "opencode-ai"
VERSION = "1.18.33"
BIN_ENV = "RALPHCTL_OPENCODE_BIN"
PROVIDER = "mock"
#: A model name without "gpt" in it: for GPT models opencode offers ``apply_patch`` instead
#: of its ``write``/``edit`` tools.
MODEL_ID = "mock-coder"
MODEL = f"{PROVIDER}/{MODEL_ID}"
#: USD per million tokens, declared in the provider config; opencode prices each step with it.
PRICE = {"input": 2.0, "output": 8.0, "cache_read": 0.5, "cache_write": 2.5}
RUN_JSON = ("run", "--format", "json")
INSTALL_HINT = (
    f"the pinned OpenCode CLI {VERSION} is missing (looked at ${BIN_ENV}, else .agents/opencode):"
    " run `bash scripts/ensure-opencode`"
)


def pinned_binary() -> Path:
    """The ``opencode`` executable that ``npm ci`` installs (a native binary), as its
    package.json names it."""
    return npm_bin(PACKAGE_DIR, "opencode", "bin/opencode.exe")


def opencode_binary() -> Path | None:
    """``$RALPHCTL_OPENCODE_BIN`` if set, else the pinned CLI; None if it is not there."""
    return configured_or_pinned(BIN_ENV, pinned_binary())


def expected_cost(usages: Sequence[Usage]) -> float:
    """What opencode reports for answers with these usages, at ``PRICE``."""
    return sum(
        (
            u.input_tokens * PRICE["input"]
            + u.output_tokens * PRICE["output"]
            + u.cache_read_input_tokens * PRICE["cache_read"]
        )
        / 1_000_000
        for u in usages
    )


def provider_config(base_url: str) -> dict[str, Any]:
    """An ``opencode.json`` making the mock at ``base_url`` the only provider and model."""
    model = {"name": "Mock Coder", "tool_call": True, "cost": PRICE}
    return {
        "$schema": "https://opencode.ai/config.json",
        "provider": {
            PROVIDER: {
                "npm": "@ai-sdk/openai-compatible",
                "name": "Mock",
                "options": {"baseURL": f"{base_url}/v1", "apiKey": "dummy"},
                "models": {MODEL_ID: model},
            }
        },
        "model": MODEL,
        "small_model": MODEL,
        "share": "disabled",
        "autoupdate": False,
        "snapshot": False,
    }


def hermetic_env(home: Path) -> dict[str, str]:
    """A complete environment (not an overlay): the CLI sees the temp home only."""
    path = hermetic_path()
    return {
        "PATH": path,
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_DATA_HOME": str(home / ".local" / "share"),
        "XDG_STATE_HOME": str(home / ".local" / "state"),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "OPENCODE_CONFIG": str(home / "opencode.json"),
        "OPENCODE_DISABLE_MODELS_FETCH": "1",
        "OPENCODE_DISABLE_AUTOUPDATE": "1",
        "OPENCODE_DISABLE_LSP_DOWNLOAD": "1",
        "OPENCODE_DISABLE_SHARE": "1",
        "RALPHCTL_AGENTS_HOME": str(home / "ralphctl-agents"),
        "TZ": "UTC",
        "NO_COLOR": "1",
    }


@dataclass(frozen=True)
class OpencodeRun(JsonLinesRun):
    """One finished ``opencode run --format json`` process: its exit status and raw output."""

    @property
    def session_id(self) -> str:
        return str(self.events[0]["sessionID"])


@dataclass
class RealOpencode:
    """The pinned CLI, a running mock, a temp home and project, and the environment tying
    them together (``env`` also sets ``RALPHCTL_OPENCODE_BIN`` for ralphctl)."""

    binary: Path
    server: MockApi
    project: Path
    home: Path
    env: dict[str, str]

    def in_project(self, project: Path) -> RealOpencode:
        """The same CLI, mock and home, working in another (new) project folder."""
        project.mkdir(parents=True, exist_ok=True)
        return replace(self, project=project)

    def run(
        self,
        prompt: str,
        *args: str,
        env: Mapping[str, str] | None = None,
        timeout: float = 60,
    ) -> OpencodeRun:
        """``opencode run --format json ARGS`` with the prompt on stdin."""
        return self.run_argv([str(self.binary), *RUN_JSON, *args], prompt, env=env, timeout=timeout)

    def run_argv(
        self,
        argv: Sequence[str],
        prompt: str,
        *,
        env: Mapping[str, str] | None = None,
        timeout: float = 60,
    ) -> OpencodeRun:
        completed = subprocess.run(
            list(argv),
            input=prompt.encode(),
            cwd=self.project,
            env={**self.env, **(env or {})},
            capture_output=True,
            timeout=timeout,
            check=False,
        )
        return OpencodeRun(
            argv, completed.returncode, completed.stdout, completed.stderr.decode(errors="replace")
        )


@dataclass(frozen=True)
class OpencodeServer:
    """A running ``opencode serve`` and the few HTTP calls a test makes to it."""

    url: str
    project: Path

    def call(self, method: str, path: str, body: Mapping[str, Any] | None = None) -> Any:
        """One JSON request (the project as the request's directory); its JSON answer."""
        request = urllib.request.Request(
            self.url + path,
            method=method,
            data=None if body is None else json.dumps(body).encode(),
            headers={"content-type": "application/json", "x-opencode-directory": str(self.project)},
        )
        with urllib.request.urlopen(request, timeout=60) as answer:
            text = answer.read()
        return json.loads(text) if text else None

    def new_session(self) -> str:
        return str(self.call("POST", "/session", {})["id"])


@contextmanager
def opencode_server(opencode: RealOpencode) -> Iterator[OpencodeServer]:
    """``opencode serve`` on a free port in the project, as the TUI runs it: its sessions stay
    alive after they go idle. Stopped (SIGTERM) on exit."""
    process = subprocess.Popen(
        [str(opencode.binary), "serve", "--port", "0"],
        cwd=opencode.project,
        env=opencode.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert process.stdout is not None
        for line in process.stdout:  # "opencode server listening on http://127.0.0.1:PORT"
            if found := re.search(r"listening on (http://\S+)", line):
                break
        else:
            raise RuntimeError(f"opencode serve exited ({process.wait()}) before listening")
        yield OpencodeServer(found[1], opencode.project)
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@contextmanager
def real_opencode_session(binary: Path, root: Path) -> Iterator[RealOpencode]:
    """A started mock, a fresh home and a project under ``root`` (outside git)."""
    with MockApi(OpenAIChat(models=(MODEL_ID,))) as server:
        home, project = root / "home", root / "project"
        for folder in (home, project):
            folder.mkdir(parents=True)
        _require_outside_git(project)
        (home / "opencode.json").write_text(json.dumps(provider_config(server.base_url), indent=2))
        env = {**hermetic_env(home), BIN_ENV: str(binary)}
        yield RealOpencode(binary, server, project, home, env)


def _require_outside_git(project: Path) -> None:
    """Inside a git work tree opencode takes the repository as its project."""
    for folder in project.resolve().parents:
        if (folder / ".git").exists():
            raise RuntimeError(f"{project} is inside the git repository {folder}: use /tmp")
