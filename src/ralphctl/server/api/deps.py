"""What the routes take from the app: the store and the loop manager."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request
from starlette.requests import HTTPConnection

from ralphctl.engine.manager import LoopManager
from ralphctl.store.repository import Store


def store_of(connection: HTTPConnection) -> Store:
    store: Store = connection.app.state.store
    return store


def manager_of(request: Request) -> LoopManager:
    manager: LoopManager = request.app.state.manager
    return manager


StoreDep = Annotated[Store, Depends(store_of)]
ManagerDep = Annotated[LoopManager, Depends(manager_of)]
