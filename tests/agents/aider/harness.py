"""Run the pinned Aider hermetically against the mock Chat Completions API.

Aider (PyPI ``aider-chat``) lives in its own venv, ``.agents/aider`` (``scripts/ensure-aider``).
Each session gets its own ``HOME``: Aider keeps ``~/.aider`` (analytics id, caches) there. Its
model-info cache is filled in advance and litellm told to use its bundled price map, so
neither fetches anything from the network. The model is pointed at the mock through Aider's
environment options (``AIDER_MODEL=openai/<m>``, ``AIDER_OPENAI_API_BASE``) and a dummy
``OPENAI_API_KEY``. Aider offers the model no tools: every chat call is a main request.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.agents.pinned import REPO_ROOT, configured_or_pinned, hermetic_path, session_root
from tests.mockapi import MockApi
from tests.mockapi.openai_chat import OpenAIChat

PINNED_BINARY = REPO_ROOT / ".agents" / "aider" / "bin" / "aider"
VERSION = "0.86.2"
BIN_ENV = "RALPHCTL_AIDER_BIN"
MODEL = "gpt-mock"
#: A model in litellm's price table: Aider then reports a cost.
PRICED_MODEL = "gpt-4.1"
HEADLESS = (
    "--yes-always",
    "--no-auto-commits",
    "--no-pretty",
    "--no-stream",
    "--no-check-update",
    "--no-show-model-warnings",
    "--no-analytics",
    "--no-git",
)
INSTALL_HINT = (
    f"the pinned Aider {VERSION} is missing (looked at ${BIN_ENV}, else .agents/aider):"
    " run `bash scripts/ensure-aider` in the repository root"
)


class AiderChat(OpenAIChat):
    """The Chat Completions API for Aider, whose requests carry no ``tools``: all are main."""

    def is_main_request(self, body: Mapping[str, Any]) -> bool:
        return True


def aider_binary() -> Path | None:
    """``$RALPHCTL_AIDER_BIN`` if set, else the pinned venv's; None if it is not there."""
    return configured_or_pinned(BIN_ENV, PINNED_BINARY)


def hermetic_env(base_url: str, home: Path, model: str = MODEL) -> dict[str, str]:
    """A complete environment (not an overlay): Aider sees the temp home and the mock only."""
    caches = home / ".aider" / "caches"
    caches.mkdir(parents=True, exist_ok=True)
    (caches / "model_prices_and_context_window.json").write_text('{"(filled)": {}}')
    runtime = home / "runtime"
    runtime.mkdir(mode=0o700, exist_ok=True)
    path = hermetic_path()
    return {
        "PATH": path,
        "HOME": str(home),
        "XDG_RUNTIME_DIR": str(runtime),  # ralphctl's private prompt and usage files
        "OPENAI_API_KEY": "dummy",
        "AIDER_MODEL": f"openai/{model}",
        "AIDER_OPENAI_API_BASE": f"{base_url}/v1",
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        "TZ": "UTC",
        "NO_COLOR": "1",
    }


@dataclass(frozen=True)
class AiderRun:
    """One finished ``aider`` process: its exit status, raw output and analytics log."""

    argv: Sequence[str]
    exit_code: int
    stdout: bytes
    stderr: str
    log: bytes | None

    @property
    def text(self) -> str:
        return self.stdout.decode(errors="replace")

    def events(self, name: str) -> list[dict[str, Any]]:
        """The analytics events called ``name``."""
        lines = (self.log or b"").splitlines()
        return [e for e in map(json.loads, lines) if e.get("event") == name]


@dataclass
class RealAider:
    """The pinned CLI, a running mock, a temp home and project, and the environment tying
    them together (``env`` also sets ``RALPHCTL_AIDER_BIN`` for ralphctl)."""

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
        timeout: float = 180,
    ) -> AiderRun:
        """``aider --message-file PROMPT <headless flags> ARGS``, its analytics logged to a
        file read back into the run."""
        message = self.home / "message.md"
        message.write_text(prompt)
        log = self.home / "analytics.jsonl"
        log.unlink(missing_ok=True)
        argv = [str(self.binary), "--message-file", str(message), *HEADLESS]
        argv += ["--analytics-log", str(log), *args]
        completed = subprocess.run(
            argv,
            stdin=subprocess.DEVNULL,
            cwd=self.project,
            env={**self.env, **(env or {})},
            capture_output=True,
            timeout=timeout,
            check=False,
        )
        return AiderRun(
            argv,
            completed.returncode,
            completed.stdout,
            completed.stderr.decode(errors="replace"),
            log.read_bytes() if log.is_file() else None,
        )


@contextmanager
def aider_session(binary: Path, root: Path | None = None) -> Iterator[RealAider]:
    """A started mock plus a fresh home and project under ``root`` (a temp dir if None)."""
    with (
        session_root(root, "ralphctl-aider-") as base,
        MockApi(AiderChat(models=(MODEL,))) as server,
    ):
        home, project = base / "home", base / "project"
        home.mkdir()
        project.mkdir()
        env = {**hermetic_env(server.base_url, home), BIN_ENV: str(binary)}
        yield RealAider(binary, server, project, home, env)
