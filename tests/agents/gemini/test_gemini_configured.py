"""Whether Gemini CLI is configured, found offline from the environment and its settings."""

from __future__ import annotations

import json
from pathlib import Path

from ralphctl.agents.gemini import SPEC
from ralphctl.agents.spec import Configuration


def configured(home: Path, **env: str) -> Configuration:
    assert SPEC.configured is not None
    return SPEC.configured(env, home)


def select(home: Path, auth_type: str) -> Path:
    directory = home / ".gemini"
    directory.mkdir(parents=True, exist_ok=True)
    settings = {"security": {"auth": {"selectedType": auth_type}}}
    (directory / "settings.json").write_text(json.dumps(settings))
    return directory


def test_an_api_key_in_the_environment_is_enough(tmp_path: Path) -> None:
    assert configured(tmp_path, GEMINI_API_KEY="k") == Configuration(True, "$GEMINI_API_KEY is set")


def test_nothing_at_all_says_what_to_set(tmp_path: Path) -> None:
    found = configured(tmp_path)

    assert not found.ok
    assert "$GEMINI_API_KEY" in found.detail


def test_a_base_url_needs_the_api_key_auth_selected(tmp_path: Path) -> None:
    found = configured(tmp_path, GEMINI_API_KEY="k", GOOGLE_GEMINI_BASE_URL="http://127.0.0.1:1")

    assert not found.ok
    assert "security.auth.selectedType" in found.detail


def test_api_key_auth_selected_needs_the_key(tmp_path: Path) -> None:
    select(tmp_path, "gemini-api-key")

    assert not configured(tmp_path).ok
    assert configured(tmp_path, GEMINI_API_KEY="k").ok


def test_a_google_login_needs_its_stored_credentials(tmp_path: Path) -> None:
    directory = select(tmp_path, "oauth-personal")
    assert not configured(tmp_path).ok

    (directory / "oauth_creds.json").write_text("{}")

    assert configured(tmp_path).ok


def test_vertex_ai_needs_a_project_and_location_or_a_key(tmp_path: Path) -> None:
    select(tmp_path, "vertex-ai")

    assert not configured(tmp_path, GOOGLE_CLOUD_PROJECT="p").ok
    assert configured(tmp_path, GOOGLE_CLOUD_PROJECT="p", GOOGLE_CLOUD_LOCATION="l").ok
    assert configured(tmp_path, GOOGLE_API_KEY="k").ok


def test_the_settings_are_read_from_gemini_cli_home(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    select(elsewhere, "gemini-api-key")

    found = configured(tmp_path / "home", GEMINI_CLI_HOME=str(elsewhere))

    assert "API key auth selected" in found.detail


def test_a_key_in_the_env_file_beside_the_settings_counts(tmp_path: Path) -> None:
    directory = tmp_path / ".gemini"
    directory.mkdir()
    (directory / ".env").write_text("# mine\nexport GEMINI_API_KEY=k\n")

    assert configured(tmp_path).ok
