"""The store a worker runs a held loop with: every transaction fenced by the lease, and each
checkpoint pushed to the loop branch in the transaction that records it."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace
from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy import Engine

from ralphctl.fleet.gitremote import checkout_loop, push_loop, rewind_loop
from ralphctl.fleet.heldstore import HeldCore, LeaseLost
from ralphctl.fleet.leaserules import Lease
from ralphctl.fleet.leases import acquire
from ralphctl.store.errors import StoreError
from ralphctl.store.repository import Store
from tests.fleet.remotes import git
from tests.store.factories import finished_iteration

pytestmark = pytest.mark.postgres

SHORT = timedelta(milliseconds=300)
LONG = timedelta(minutes=5)


def hold(engine: Engine, loop_id: str, worker: str, ttl: timedelta) -> Lease:
    with engine.begin() as conn:
        lease = acquire(conn, loop_id, worker, ttl)
    assert lease is not None
    return lease


def commit(workdir: Path, n: int, note: str = "") -> str:
    (workdir / "NOTES.md").write_text(f"iteration {n} {note}\n")
    git(workdir, "add", "NOTES.md")
    git(workdir, "commit", "-q", "-m", f"iteration {n}")
    return git(workdir, "rev-parse", "HEAD")


def test_a_worker_whose_lease_was_taken_over_can_neither_read_nor_write(
    postgres_url: str, fleet_engine: Engine, make_loop: Callable[[str], str], tmp_path: Path
) -> None:
    loop_id = make_loop("loop-held")
    stale = hold(fleet_engine, loop_id, "build-01", SHORT)
    store = Store.over(HeldCore(fleet_engine, stale, tmp_path, None), postgres_url)
    loop = store.save_loop(replace(store.get_loop(loop_id), name="written while held"))

    time.sleep(SHORT.total_seconds() + 0.2)
    hold(fleet_engine, loop_id, "build-02", LONG)

    with pytest.raises(LeaseLost, match="this worker lost loop loop-held"):
        store.save_loop(replace(loop, name="written after the takeover"))
    with pytest.raises(LeaseLost):
        store.get_loop(loop_id)
    with Store.open(postgres_url) as plain:
        assert plain.get_loop(loop_id).name == "written while held"


def test_a_checkpoint_is_pushed_to_the_loop_branch_then_recorded(
    postgres_url: str,
    fleet_engine: Engine,
    make_loop: Callable[[str], str],
    remote: Path,
    tmp_path: Path,
) -> None:
    loop_id = make_loop("loop-push")
    checkout = checkout_loop(str(remote), tmp_path / "cache", loop_id, "main")
    lease = hold(fleet_engine, loop_id, "build-01", LONG)
    store = Store.over(HeldCore(fleet_engine, lease, checkout.workdir, None), postgres_url)

    sha = commit(checkout.workdir, 1)
    store.add_checkpoint(loop_id, 1, sha, {})

    assert git(remote, "rev-parse", f"ralph/{loop_id}") == sha
    assert [c.commit_sha for c in store.checkpoints(loop_id)] == [sha]


def test_a_push_the_remote_refuses_drops_the_loop_unrecorded(
    postgres_url: str,
    fleet_engine: Engine,
    make_loop: Callable[[str], str],
    remote: Path,
    tmp_path: Path,
) -> None:
    loop_id = make_loop("loop-race")
    elsewhere = checkout_loop(str(remote), tmp_path / "build-02", loop_id, "main")
    mine = checkout_loop(str(remote), tmp_path / "build-01", loop_id, "main")
    theirs = commit(elsewhere.workdir, 1, "by build-02")
    assert push_loop(elsewhere.workdir, loop_id, None).sha == theirs
    lease = hold(fleet_engine, loop_id, "build-01", LONG)
    store = Store.over(HeldCore(fleet_engine, lease, mine.workdir, None), postgres_url)

    with pytest.raises(LeaseLost, match="cannot push the checkpoint of iteration 1"):
        store.add_checkpoint(loop_id, 1, commit(mine.workdir, 1), {})

    assert git(remote, "rev-parse", f"ralph/{loop_id}") == theirs
    assert store.checkpoints(loop_id) == []


def test_an_iteration_is_recorded_with_its_checkpoint_in_the_transaction_that_pushes_it(
    postgres_url: str,
    fleet_engine: Engine,
    make_loop: Callable[[str], str],
    remote: Path,
    tmp_path: Path,
) -> None:
    loop_id = make_loop("loop-atomic")
    checkout = checkout_loop(str(remote), tmp_path / "cache", loop_id, "main")
    lease = hold(fleet_engine, loop_id, "build-01", LONG)
    store = Store.over(HeldCore(fleet_engine, lease, checkout.workdir, None), postgres_url)
    done = finished_iteration(loop_id, 1)
    store.begin_iteration(done)

    sha = commit(checkout.workdir, 1)
    loop = replace(store.get_loop(loop_id), iteration=1, cost_usd=0.0125)
    store.complete_iteration(done, loop, [], sha)

    assert git(remote, "rev-parse", f"ralph/{loop_id}") == sha
    (checkpoint,) = store.checkpoints(loop_id)
    assert (checkpoint.iteration, checkpoint.commit_sha) == (1, sha)
    assert checkpoint.snapshot["cost_usd"] == 0.0125
    assert [it.status for it in store.iterations(loop_id)] == ["ok"]


def test_a_push_whose_record_never_committed_is_rewound_by_the_next_holder(
    postgres_url: str,
    fleet_engine: Engine,
    make_loop: Callable[[str], str],
    remote: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    loop_id = make_loop("loop-rewound")
    dead = checkout_loop(str(remote), tmp_path / "build-01", loop_id, "main")
    store = Store.over(
        HeldCore(fleet_engine, hold(fleet_engine, loop_id, "build-01", SHORT), dead.workdir, None),
        postgres_url,
    )
    done = finished_iteration(loop_id, 1)
    store.begin_iteration(done)
    orphan = commit(dead.workdir, 1, "by a worker killed after its push")

    def killed(*_args: object) -> None:
        raise StoreError("killed before the commit")

    with monkeypatch.context() as patch:
        patch.setattr("ralphctl.store.core._insert_events", killed)
        with pytest.raises(StoreError):
            store.complete_iteration(
                done, replace(store.get_loop(loop_id), iteration=1), [], orphan
            )
    assert git(remote, "rev-parse", f"ralph/{loop_id}") == orphan
    assert store.checkpoints(loop_id) == []

    time.sleep(SHORT.total_seconds() + 0.2)
    taken = checkout_loop(str(remote), tmp_path / "build-02", loop_id, "main")
    assert taken.pushed == orphan
    rewound = rewind_loop(taken, None, "main")
    assert rewound.head == git(remote, "rev-parse", "main")
    core = HeldCore(
        fleet_engine, hold(fleet_engine, loop_id, "build-02", LONG), taken.workdir, taken.pushed
    )
    again = commit(taken.workdir, 1, "by the next holder")
    Store.over(core, postgres_url).add_checkpoint(loop_id, 1, again, {})

    assert git(remote, "rev-list", f"ralph/{loop_id}") == f"{again}\n{rewound.head}"
