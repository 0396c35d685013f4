"""The store of every loop shape, built once for the read-command tests of this package."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from ralphctl.store.repository import Store
from tests.cli.loop_shapes import FLEET_SHAPES, build
from tests.pg import create_schema


@dataclass(frozen=True)
class Shaped:
    """The store's URL, the open store, and each shape's loop id by shape name."""

    url: str
    store: Store
    ids: dict[str, str]


@pytest.fixture(scope="package")
def shaped(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Shaped]:
    root = tmp_path_factory.mktemp("shapes")
    url = str(root / "ralphctl.db")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("RALPHCTL_CONFIG", str(root / "no-user-config.toml"))
        patch.setenv("RALPHCTL_SERVER_DIR", str(root / "no-server"))
        with Store.open(url) as store:
            yield Shaped(url, store, build(store, url, root))


@pytest.fixture(scope="package")
def fleet_shaped(
    tmp_path_factory: pytest.TempPathFactory, postgres_server_url: str
) -> Iterator[Shaped]:
    """Every fleet loop shape, on PostgreSQL (fleet loops live there only)."""
    root = tmp_path_factory.mktemp("fleet-shapes")
    url = create_schema(postgres_server_url, f"fleet_shapes_{uuid.uuid4().hex[:12]}")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("RALPHCTL_CONFIG", str(root / "no-user-config.toml"))
        patch.setenv("RALPHCTL_SERVER_DIR", str(root / "no-server"))
        with Store.open(url) as store:
            yield Shaped(url, store, build(store, url, root, FLEET_SHAPES))
