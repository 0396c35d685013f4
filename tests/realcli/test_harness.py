"""The harness's own rules: which binary it picks and what environment the CLI gets."""

from __future__ import annotations

import json
import stat
import subprocess

import pytest

from tests.agents.pinned import REPO_ROOT
from tests.realcli.fixtures import every_supported_version
from tests.realcli.harness import (
    NEWEST_VERSION,
    OLDEST_VERSION,
    SUPPORTED_VERSIONS,
    claude_binary,
    hermetic_env,
    package_dir,
    pinned_binary,
)


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

    assert claude_binary() in (pinned_binary(NEWEST_VERSION), None)


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


def test_every_supported_version_is_pinned_exactly_in_package_json():
    manifest = json.loads((REPO_ROOT / "package.json").read_text())
    pins = manifest["dependencies"]
    assert pins["@anthropic-ai/claude-code"] == NEWEST_VERSION
    for version in SUPPORTED_VERSIONS:
        if version != NEWEST_VERSION:
            assert pins[f"claude-code-{version}"] == f"npm:@anthropic-ai/claude-code@{version}"


def test_the_newest_version_is_found_where_npm_puts_it_not_in_the_shared_bin_folder():
    assert package_dir(NEWEST_VERSION) == REPO_ROOT / "node_modules/@anthropic-ai/claude-code"
    assert package_dir(OLDEST_VERSION) == REPO_ROOT / f"node_modules/claude-code-{OLDEST_VERSION}"


@pytest.mark.real_cli
@every_supported_version
def test_each_pinned_version_runs_and_says_which_it_is(claude_bin, claude_version):
    shown = subprocess.run(
        [str(claude_bin), "--version"], capture_output=True, text=True, timeout=60, check=False
    )
    assert shown.stdout.split()[0] == claude_version, shown.stderr
