"""Checkpoints: the git commits a loop took, with a snapshot of its totals."""

from __future__ import annotations

from ralphctl.store.repository import Store
from tests.store.factories import new_loop


def test_checkpoints_read_back_in_the_order_they_were_taken(store: Store) -> None:
    loop = store.create_loop(new_loop())
    first = store.add_checkpoint(loop.id, 5, "a" * 40, {"iteration": 5, "cost_usd": 0.5})
    second = store.add_checkpoint(loop.id, 10, "b" * 40, {"iteration": 10, "cost_usd": 1.25})

    assert store.checkpoints(loop.id) == [first, second]
    assert first.snapshot == {"iteration": 5, "cost_usd": 0.5}
    assert first.created_at.tzinfo is not None


def test_checkpoints_belong_to_their_loop(store: Store) -> None:
    one = store.create_loop(new_loop("loop-one"))
    store.create_loop(new_loop("loop-two"))
    store.add_checkpoint(one.id, 1, "c" * 40, {})

    assert store.checkpoints("loop-two") == []
