"""The commands AmpAdapter builds, run by the real Amp CLI against a local stand-in for Amp's
server: how far the real CLI gets offline (docs/agents/amp.md, "Why no real-CLI test").

Amp's agent loop runs in its vendor's server, so no model turn can be played here. What can
be checked is that the CLI takes every argv the adapter builds (fresh, resumed, each mode, the
mode-as-model, isolation), sends what those flags say to the server it is pointed at
(``AMP_URL``), and fails in the way the parser reads. The CLI is the pinned one that
scripts/ensure-amp installs (or ``$RALPHCTL_AMP_BIN``).
"""

from __future__ import annotations

import json
import subprocess
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from ralphctl.agents.amp import BIN_ENV, AmpAdapter
from ralphctl.agents.amp import PACKAGE as AMP_PACKAGE
from ralphctl.agents.amp_stream import AmpStreamParser
from ralphctl.agents.base import AgentRequest
from ralphctl.domain.analyzer import ErrorClass, classify_error
from ralphctl.domain.model import IterationResult
from tests.agents.pinned import REPO_ROOT, configured_or_pinned, npm_bin, required
from tests.agents.streams import exited

pytestmark = [pytest.mark.real_cli, pytest.mark.timeout(180)]

#: Where scripts/ensure-amp installs the pinned CLI (``npm ci`` cannot: see the script).
PREFIX = REPO_ROOT / ".agents" / "amp"
THREAD = "T-5f0c2a7e-3b1d-4c8e-9a47-0e6d2b9c1f3a"
USER: dict[str, object] = {
    "id": "user-1",
    "email": "dev@example.invalid",
    "features": [],
    "team": None,
}


@dataclass
class AmpServer:
    """A stand-in for Amp's server: answers ``getUserInfo`` with ``user_status`` (and the
    user), the other internal calls with an empty success, anything else 404; keeps every
    request (method, path, JSON body, authorization)."""

    user_status: int = 200
    requests: list[dict[str, Any]] = field(default_factory=list)

    def answer(self, path: str) -> tuple[int, object]:
        if "getUserInfo" in path:
            if self.user_status != 200:
                return self.user_status, {"ok": False, "error": {"code": "auth-required"}}
            return 200, {"ok": True, "result": USER}
        if path.startswith("/api/internal"):
            return 200, {"ok": True, "result": {}}
        return 404, {"error": "not served here"}

    def paths(self) -> list[str]:
        return [request["path"] for request in self.requests]


@pytest.fixture(scope="module")
def amp_bin() -> str:
    pinned = npm_bin(PREFIX / "node_modules" / "@ampcode" / "cli", "amp", "bin/amp.exe")
    hint = f"the pinned Amp CLI {AMP_PACKAGE.version} is missing: run `bash scripts/ensure-amp`"
    return str(required(configured_or_pinned(BIN_ENV, pinned), hint))


@pytest.fixture
def server() -> Iterator[tuple[AmpServer, str]]:
    state = AmpServer()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            size = int(self.headers.get("content-length") or 0)
            body = self.rfile.read(size) if size else b""
            state.requests.append(
                {
                    "path": self.path,
                    "body": json.loads(body) if body.startswith((b"{", b"[")) else None,
                    "authorization": self.headers.get("authorization"),
                }
            )
            status, payload = state.answer(self.path)
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST

        def log_message(self, *_: object) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield state, f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


def run_adapter(
    amp_bin: str,
    url: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    **fields: Any,
) -> IterationResult:
    """One iteration as ralphctl would run it: the adapter's argv, stdin and environment, in a
    home of its own, against the server at ``url``."""
    monkeypatch.setenv(BIN_ENV, amp_bin)
    home = tmp_path / "home"
    project = tmp_path / "project"
    for folder in (home, project):
        folder.mkdir(exist_ok=True)
    request = AgentRequest(prompt="Say hello.", workdir=project, iteration=1, session_id=THREAD)
    command = AmpAdapter().build_command(replace(request, **fields))
    env = {
        "HOME": str(home),
        "PATH": "/usr/bin:/bin",
        "AMP_URL": url,
        "AMP_API_KEY": "dummy-key",
        **command.env,
    }
    done = subprocess.run(
        command.argv,
        input=command.stdin,
        cwd=project,
        env=env,
        capture_output=True,
        timeout=120,
        check=False,
    )
    parser = AmpStreamParser()
    for line in done.stdout.splitlines():
        parser.feed(line)
    return parser.finish(exited(done.returncode, done.stderr.decode(errors="replace")))


def test_a_rejected_key_is_an_auth_error(amp_bin, server, tmp_path, monkeypatch):
    state, url = server
    state.user_status = 401

    result = run_adapter(amp_bin, url, tmp_path, monkeypatch)

    assert result.truncated
    assert classify_error(result) is ErrorClass.AUTH
    assert "Invalid or missing API key" in (result.error_message or "")
    assert state.requests[0]["authorization"] == "Bearer dummy-key"


def test_a_fresh_run_asks_the_server_for_a_thread_in_the_mode_given(
    amp_bin, server, tmp_path, monkeypatch
):
    state, url = server
    prompt_path = tmp_path / "private" / "prompt.md"

    result = run_adapter(
        amp_bin,
        url,
        tmp_path,
        monkeypatch,
        model="high",
        permission_mode="bypassPermissions",
        isolate_config=True,
        prompt_path=prompt_path,
    )

    created = [r["body"] for r in state.requests if r["path"] == "/api/thread-actors"]
    assert created
    assert created[0]["agentMode"] == "high"
    assert created[0]["executorType"] == "local-client"  # tools would run here, the loop there
    assert result.is_error
    assert result.truncated  # no thread: the CLI ends before any stream line
    assert not prompt_path.parent.exists()  # the missing settings file stays missing


def test_a_resumed_run_asks_for_the_thread_by_its_id(amp_bin, server, tmp_path, monkeypatch):
    state, url = server

    result = run_adapter(amp_bin, url, tmp_path, monkeypatch, resume=True)

    tails = [r["body"] for r in state.requests if "getThreadTail" in r["path"]]
    assert tails
    assert tails[0]["params"]["thread"] == THREAD
    assert result.is_error
    assert "/api/thread-actors" not in state.paths()
