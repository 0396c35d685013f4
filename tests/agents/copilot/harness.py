"""Run the pinned GitHub Copilot CLI hermetically against the mock Chat Completions API.

The CLI runs in its bring-your-own-key mode (``COPILOT_PROVIDER_*``, ``COPILOT_OFFLINE``): no
GitHub login, no network but the mock. Each session gets its own ``HOME`` (the CLI keeps its
state in ``~/.copilot``); the package the CLI unpacks on its first start (about 235 MB, into
``$XDG_CACHE_HOME/copilot``) is shared by every session of a test run, which saves seconds per
session. The model is one the CLI knows (``gpt-4.1``): it then offers its ``create``/``edit``
tools as JSON functions (an unknown model gets a freeform ``apply_patch`` instead).
"""

from __future__ import annotations

import os
import subprocess
import tempfile
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
    session_root,
)
from tests.mockapi import MockApi
from tests.mockapi.openai_chat import OpenAIChat

PINNED_BINARY = NODE_MODULES / ".bin" / "copilot"
VERSION = "1.0.102"
BIN_ENV = "RALPHCTL_COPILOT_BIN"
MODEL = "gpt-4.1"
JSON_OUTPUT = ("--output-format", "json", "-s", "--no-ask-user", "--no-auto-update")
INSTALL_HINT = missing_hint("GitHub Copilot CLI", VERSION, BIN_ENV)
#: Shared by every session of this process: the CLI's unpacked package.
SHARED_CACHE = Path(tempfile.gettempdir()) / f"ralphctl-test-copilot-cache-{os.getuid()}"


def copilot_binary() -> Path | None:
    """``$RALPHCTL_COPILOT_BIN`` if set, else the pinned CLI; None if it is not there."""
    return configured_or_pinned(BIN_ENV, PINNED_BINARY)


def hermetic_env(base_url: str, home: Path) -> dict[str, str]:
    """A complete environment (not an overlay): the CLI sees the temp home and the mock only."""
    path = hermetic_path()
    runtime = home / "runtime"
    runtime.mkdir(mode=0o700, parents=True, exist_ok=True)
    return {
        "PATH": path,
        "HOME": str(home),
        "XDG_CACHE_HOME": str(SHARED_CACHE),
        "XDG_RUNTIME_DIR": str(runtime),  # ralphctl's private prompt and usage files
        "COPILOT_PROVIDER_BASE_URL": f"{base_url}/v1",
        "COPILOT_PROVIDER_TYPE": "openai",
        "COPILOT_PROVIDER_API_KEY": "dummy",
        "COPILOT_MODEL": MODEL,
        "COPILOT_OFFLINE": "true",
        "COPILOT_AUTO_UPDATE": "false",
        "TZ": "UTC",
        "NO_COLOR": "1",
    }


@dataclass(frozen=True)
class CopilotRun(JsonLinesRun):
    """One finished ``copilot`` process: its exit status, raw output and usage file."""

    usage: bytes | None

    @property
    def result(self) -> dict[str, Any]:
        """The closing ``result`` line, which must be the last line of a run."""
        assert self.events[-1]["type"] == "result", self.stderr
        return self.events[-1]


@dataclass
class RealCopilot:
    """The pinned CLI, a running mock, a temp home and project, and the environment tying
    them together (``env`` also sets ``RALPHCTL_COPILOT_BIN`` for ralphctl)."""

    binary: Path
    server: MockApi
    project: Path
    home: Path
    env: dict[str, str]

    def run(
        self,
        prompt: str,
        *args: str,
        env: Mapping[str, str] | None = None,
        timeout: float = 90,
    ) -> CopilotRun:
        """``copilot --output-format json -s --no-ask-user … ARGS``, the prompt on stdin, its
        usage written to a file read back into the run."""
        usage = self.home / "usage.json"
        usage.unlink(missing_ok=True)
        argv = [str(self.binary), *JSON_OUTPUT, "--usage-output-file", str(usage), *args]
        completed = subprocess.run(
            argv,
            input=prompt.encode(),
            cwd=self.project,
            env={**self.env, **(env or {})},
            capture_output=True,
            timeout=timeout,
            check=False,
        )
        return CopilotRun(
            argv,
            completed.returncode,
            completed.stdout,
            completed.stderr.decode(errors="replace"),
            usage.read_bytes() if usage.is_file() else None,
        )


@contextmanager
def copilot_session(binary: Path, root: Path | None = None) -> Iterator[RealCopilot]:
    """A started mock plus a fresh home and project under ``root`` (a temp dir if None)."""
    with (
        session_root(root, "ralphctl-copilot-") as base,
        MockApi(OpenAIChat(models=(MODEL,))) as server,
    ):
        home, project = base / "home", base / "project"
        home.mkdir()
        project.mkdir()
        env = {**hermetic_env(server.base_url, home), BIN_ENV: str(binary)}
        yield RealCopilot(binary, server, project, home, env)
