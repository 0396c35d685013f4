"""Run the pinned Codex CLI hermetically against the mock Responses API.

Each session gets its own ``HOME`` and ``CODEX_HOME`` (never the user's) whose ``config.toml``
selects the mock as the model provider, with no request or stream retries so that errors
come back at once. ``CODEX_HOME`` is kept out of ``/tmp``: under a temporary dir Codex 0.169.0
refuses to create its helper binaries (it warns and goes on here; reported elsewhere to break
its sandboxed shell), so it goes under ``/var/tmp`` when that is writable.

The sandboxed shell writes to the project and a private ``TMPDIR`` only, never to ``/tmp``:
Codex mounts a read-only ``.git`` over every writable root, and for ``/tmp`` bubblewrap makes
that mount point in the machine's own ``/tmp``, so a ``/tmp/.git`` came and went while a test
ran, and a concurrent test found its ``/tmp`` project "inside a git repository".
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from tests.agents.pinned import (
    NODE_MODULES,
    JsonLinesRun,
    configured_or_pinned,
    hermetic_path,
    missing_hint,
    npm_bin,
)
from tests.mockapi.openai_responses import MockResponsesApi

PACKAGE_DIR = NODE_MODULES / "@openai" / "codex"
VERSION = "0.169.0"
BIN_ENV = "RALPHCTL_CODEX_BIN"
#: A model the CLI has metadata for: it then offers its classic tools (``exec_command``, the
#: freeform ``apply_patch``). Its default model wraps every tool in a JavaScript ``exec`` tool.
MODEL = "gpt-5.5"
KEY_ENV = "RALPHCTL_MOCK_OPENAI_KEY"
EXEC_JSON = ("exec", "--json", "--skip-git-repo-check")
INSTALL_HINT = missing_hint("Codex CLI", VERSION, BIN_ENV)


def pinned_binary() -> Path:
    """The ``codex`` launcher that ``npm ci`` installs (a Node script starting the native
    binary of this platform), as its package.json names it."""
    return npm_bin(PACKAGE_DIR, "codex", "bin/codex.js")


def codex_binary() -> Path | None:
    """``$RALPHCTL_CODEX_BIN`` if set, else the pinned CLI; None if it is not there."""
    return configured_or_pinned(BIN_ENV, pinned_binary())


def provider_config(base_url: str, *, model: str = MODEL) -> str:
    """A ``config.toml`` that makes the mock at ``base_url`` the model provider."""
    return (
        f'model = "{model}"\n'
        'model_provider = "mock"\n'
        "\n"
        "[model_providers.mock]\n"
        'name = "mock"\n'
        f'base_url = "{base_url}/v1"\n'
        'wire_api = "responses"\n'
        f'env_key = "{KEY_ENV}"\n'
        "request_max_retries = 0\n"
        "stream_max_retries = 0\n"
        "stream_idle_timeout_ms = 20000\n"
        "\n"
        "[sandbox_workspace_write]\n"
        "exclude_slash_tmp = true\n"
    )


def hermetic_env(home: Path, codex_home: Path, tmp: Path) -> dict[str, str]:
    """A complete environment (not an overlay): the CLI sees the temp homes only."""
    path = hermetic_path()
    return {
        "PATH": path,
        "HOME": str(home),
        "CODEX_HOME": str(codex_home),
        "TMPDIR": str(tmp),
        KEY_ENV: "dummy",
        "TZ": "UTC",
        "NO_COLOR": "1",
    }


@dataclass(frozen=True)
class CodexRun(JsonLinesRun):
    """One finished ``codex exec --json`` process: its exit status and raw output."""

    def items(self, item_type: str) -> list[dict[str, Any]]:
        """The completed items of one type."""
        return [e["item"] for e in self.of_type("item.completed") if e["item"]["type"] == item_type]

    @property
    def thread_id(self) -> str:
        return str(self.of_type("thread.started")[0]["thread_id"])


@dataclass
class RealCodex:
    """The pinned CLI, a running mock, temp homes and a project, and the environment tying
    them together (``env`` also sets ``RALPHCTL_CODEX_BIN`` for ralphctl)."""

    binary: Path
    server: MockResponsesApi
    project: Path
    home: Path
    codex_home: Path
    env: dict[str, str]

    def in_project(self, project: Path) -> RealCodex:
        """The same CLI, mock and homes, working in another (new) project folder."""
        project.mkdir(parents=True, exist_ok=True)
        return replace(self, project=project)

    def run(
        self,
        prompt: str,
        *args: str,
        env: Mapping[str, str] | None = None,
        subcommand: Sequence[str] = (),
        timeout: float = 60,
    ) -> CodexRun:
        """``codex exec --json --skip-git-repo-check ARGS [SUBCOMMAND] -``, prompt on stdin."""
        argv = [str(self.binary), *EXEC_JSON, *args, *subcommand, "-"]
        return self.run_argv(argv, prompt, env=env, timeout=timeout)

    def run_argv(
        self,
        argv: Sequence[str],
        prompt: str,
        *,
        env: Mapping[str, str] | None = None,
        timeout: float = 60,
    ) -> CodexRun:
        # its own process group: on a timeout the native binary dies with the Node launcher
        with subprocess.Popen(
            list(argv),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=self.project,
            env={**self.env, **(env or {})},
            start_new_session=True,
        ) as process:
            try:
                stdout, stderr = process.communicate(prompt.encode(), timeout=timeout)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.communicate()
                raise
        return CodexRun(argv, process.returncode, stdout, stderr.decode(errors="replace"))


@contextmanager
def real_codex_session(
    binary: Path, project_root: Path, reset_in_s: int = 3600
) -> Iterator[RealCodex]:
    """A started mock, fresh homes, and a project under ``project_root`` (outside git)."""
    with _codex_root() as base, MockResponsesApi(reset_in_s) as server:
        home, codex_home, tmp = base / "home", base / "codex", base / "tmp"
        project = project_root / "project"
        for folder in (home, codex_home, tmp, project):
            folder.mkdir(parents=True)
        (codex_home / "config.toml").write_text(provider_config(server.base_url))
        env = {**hermetic_env(home, codex_home, tmp), BIN_ENV: str(binary)}
        yield RealCodex(binary, server, project, home, codex_home, env)


@contextmanager
def _codex_root() -> Iterator[Path]:
    """A private directory for the homes, outside ``/tmp`` when possible."""
    parent = Path("/var/tmp")
    made = tempfile.mkdtemp(
        prefix="ralphctl-codex-", dir=parent if os.access(parent, os.W_OK) else None
    )
    try:
        yield Path(made)
    finally:
        shutil.rmtree(made, ignore_errors=True)
