"""The Stop hook a hook-mode run adds to ``codex exec`` (``-c`` overrides with its trust) and
the trust hash Codex asks of a hook. test_codex_hook_mode.py holds both to the real CLI."""

from __future__ import annotations

import hashlib
import itertools
import tomllib
from pathlib import Path
from typing import Any

import pytest

from ralphctl.agents.base import AgentRequest, StopHook
from ralphctl.agents.codex import CodexAdapter
from ralphctl.agents.codex_hooks import (
    SESSION_FLAGS_SOURCE,
    hook_key,
    session_stop_hook,
    stop_group,
    trusted_hash,
)
from tests.agents.fake_cli import put_executable

COMMAND = "/usr/bin/python3 -I -S /opt/ralphctl/hook/__main__.py stop --format codex"
HOOK = StopHook("/usr/bin/python3 -I -S /opt/ralphctl/hook/__main__.py stop", 30, max_blocks=6)
THREAD = "01a209dc-0000-7000-8000-000000000001"


@pytest.fixture(autouse=True)
def codex_on_path(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("RALPHCTL_CODEX_BIN", str(put_executable(tmp_path / "bin" / "codex")))
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "codex-home"))


def argv(**fields: Any) -> list[str]:
    request = AgentRequest(
        **{"prompt": "Go.", "workdir": Path("/w"), "iteration": 1, "session_id": THREAD, **fields}
    )
    return list(CodexAdapter().build_command(request).argv)[1:]


def overrides(args: list[str]) -> dict[str, Any]:
    """The ``-c KEY=VALUE`` overrides in ``args``, parsed as Codex parses them (TOML)."""
    found: dict[str, Any] = {}
    for flag, value in itertools.pairwise(args):
        if flag == "-c":
            key, _, toml = value.partition("=")
            found[key] = tomllib.loads(f"v = {toml}")["v"]
    return found


def test_the_trust_hash_is_the_sha256_of_the_normalised_hook_as_compact_sorted_json():
    canonical = (
        '{"event_name":"stop","hooks":[{"async":false,"command":"run it","timeout":30,'
        '"type":"command"}]}'
    )

    assert trusted_hash(stop_group("run it", 30)) == (
        "sha256:" + hashlib.sha256(canonical.encode()).hexdigest()
    )


def test_the_trust_hash_changes_with_the_command_and_the_timeout():
    hashes = {
        trusted_hash(stop_group("run it", 30)),
        trusted_hash(stop_group("run it", 31)),
        trusted_hash(stop_group("run that", 30)),
    }

    assert len(hashes) == 3


def test_a_hook_keys_its_trust_by_source_event_and_position():
    assert hook_key("/home/u/.codex/hooks.json") == "/home/u/.codex/hooks.json:stop:0:0"


def test_the_session_hook_and_its_trust_are_two_toml_overrides():
    found = overrides(session_stop_hook(COMMAND, 30))

    assert found["hooks.Stop"] == [stop_group(COMMAND, 30)]
    key = f"{SESSION_FLAGS_SOURCE}:stop:0:0"
    assert found["hooks.state"] == {key: {"trusted_hash": trusted_hash(stop_group(COMMAND, 30))}}


def test_a_command_with_quotes_and_backslashes_survives_toml():
    command = "/opt/my dir/py -c 'print(\"a\\\\b\")'"

    found = overrides(session_stop_hook(command, 30))

    assert found["hooks.Stop"][0]["hooks"][0]["command"] == command


def test_a_hook_mode_run_adds_the_codex_format_hook_and_turns_hooks_on():
    args = argv(stop_hook=HOOK)

    assert args[args.index("--enable") + 1] == "hooks"
    assert overrides(args)["hooks.Stop"] == [stop_group(COMMAND, 30)]
    assert "--dangerously-bypass-hook-trust" not in args
    assert args[-1] == "-"


def test_a_resumed_hook_mode_run_names_the_thread_after_every_option():
    args = argv(stop_hook=HOOK, resume=True)

    assert args[-3:] == ["resume", THREAD, "-"]
    assert max(i for i, arg in enumerate(args) if arg == "-c") < args.index("resume")


def test_isolation_keeps_hooks_on_when_the_run_brings_its_stop_hook():
    isolated = argv(isolate_config=True)
    hooked = argv(isolate_config=True, stop_hook=HOOK)

    assert "--ignore-user-config" in isolated
    assert isolated[isolated.index("hooks") - 1] == "--disable"
    assert "--ignore-user-config" in hooked
    assert hooked[hooked.index("hooks") - 1] == "--enable"
    assert hooked.count("--disable") == 1  # plugins only


def test_codex_can_keep_one_session_going_and_names_its_sessions_itself():
    capabilities = CodexAdapter().capabilities

    assert (capabilities.same_session, capabilities.resume) == (True, True)
    assert capabilities.chooses_session_id
