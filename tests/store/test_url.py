"""Which database is used, and how its URL is shown."""

from __future__ import annotations

from pathlib import Path

import pytest

from ralphctl.store.url import display, mask, resolve_url, sqlite_path


@pytest.fixture(autouse=True)
def no_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RALPHCTL_DB", raising=False)


def test_a_bare_path_is_a_sqlite_file(tmp_path: Path) -> None:
    assert resolve_url(str(tmp_path / "x.db")) == f"sqlite:///{tmp_path}/x.db"


def test_a_relative_path_is_made_absolute(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)

    assert resolve_url("loops.db") == f"sqlite:///{tmp_path}/loops.db"


def test_postgresql_urls_use_psycopg_3() -> None:
    assert resolve_url("postgresql://u:p@db/r") == "postgresql+psycopg://u:p@db/r"
    assert resolve_url("postgres://db/r") == "postgresql+psycopg://db/r"


def test_other_urls_are_kept() -> None:
    assert resolve_url("sqlite:////srv/r.db") == "sqlite:////srv/r.db"


def test_the_explicit_value_wins_over_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RALPHCTL_DB", "postgresql://env/r")

    assert resolve_url("sqlite:////x.db") == "sqlite:////x.db"
    assert resolve_url(None) == "postgresql+psycopg://env/r"


def test_the_default_is_a_file_in_the_user_data_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))

    assert resolve_url(None) == f"sqlite:///{tmp_path}/ralphctl/ralphctl.db"


def test_mask_hides_only_the_password() -> None:
    assert (
        mask("postgresql+psycopg://me:s3cr@t@db:5432/r") == "postgresql+psycopg://me:***@db:5432/r"
    )
    assert mask("postgresql://me@db/r") == "postgresql://me@db/r"
    assert mask("sqlite:////tmp/a:b@c.db") == "sqlite:////tmp/a:b@c.db"


def test_sqlite_path_knows_files_from_memory() -> None:
    assert sqlite_path("sqlite:////srv/r.db") == Path("/srv/r.db")
    assert sqlite_path("sqlite:///r.db") == Path("r.db")
    assert sqlite_path("sqlite://") is None
    assert sqlite_path("sqlite:///:memory:") is None
    assert sqlite_path("postgresql://db/r") is None


def test_messages_name_a_file_by_path_and_a_server_by_masked_url() -> None:
    assert display("sqlite:////srv/r.db") == "'/srv/r.db'"
    assert display("postgresql://me:pw@db/r") == "postgresql://me:***@db/r"
