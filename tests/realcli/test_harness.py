"""The harness's own rules: which binary it picks and what environment the CLI gets."""

from __future__ import annotations

import stat

from tests.realcli.harness import PINNED_BIN, claude_binary, hermetic_env


def test_the_binary_comes_from_ralphctl_claude_bin_when_set(monkeypatch, tmp_path):
    fake = tmp_path / "claude"
    fake.write_text("#!/bin/sh\n")
    fake.chmod(0o755)
    monkeypatch.setenv("RALPHCTL_CLAUDE_BIN", str(fake))

    assert claude_binary() == fake


def test_a_missing_binary_is_none_not_an_error(monkeypatch, tmp_path):
    monkeypatch.setenv("RALPHCTL_CLAUDE_BIN", str(tmp_path / "nowhere"))

    assert claude_binary() is None


def test_without_the_variable_the_npm_pinned_binary_is_used(monkeypatch):
    monkeypatch.delenv("RALPHCTL_CLAUDE_BIN", raising=False)

    assert claude_binary() in (PINNED_BIN, None)


def test_the_environment_is_built_from_scratch(monkeypatch, tmp_path):
    monkeypatch.setenv("CLAUDECODE", "1")
    monkeypatch.setenv("ANTHROPIC_AUTH_TOKEN", "a real token")

    env = hermetic_env("http://127.0.0.1:9", tmp_path)

    assert "CLAUDECODE" not in env
    assert "ANTHROPIC_AUTH_TOKEN" not in env
    assert env["ANTHROPIC_BASE_URL"] == "http://127.0.0.1:9"
    assert env["CLAUDE_CONFIG_DIR"] == str(tmp_path / ".claude")
    assert env["CLAUDE_CODE_MAX_RETRIES"] == "0"
    assert stat.S_IMODE((tmp_path / "tmp").stat().st_mode) == 0o700
