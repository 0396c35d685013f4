"""The store of every loop shape, built once for the read-command tests of this package."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from ralphctl.store.repository import Store
from tests.cli.loop_shapes import build


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
