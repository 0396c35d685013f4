"""How asyncio learns that a child exited: through a pidfd in the loop that started it, also on
Python 3.11 (agents/childwatch)."""

from __future__ import annotations

import asyncio
import sys
import threading

import pytest

from ralphctl.agents import childwatch
from ralphctl.agents.childwatch import use_pidfd

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="pidfds are Linux's")
before_312 = pytest.mark.skipif(
    sys.version_info >= (3, 12), reason="Python 3.12+ watches children through pidfds itself"
)


async def exit_status(code: str) -> int:
    process = await asyncio.create_subprocess_exec(sys.executable, "-c", code)
    return await process.wait()


@before_312
def test_on_python_3_11_use_pidfd_installs_the_pidfd_watcher():
    use_pidfd()
    assert isinstance(asyncio.get_child_watcher(), childwatch.PidfdWatcher)


@before_312
@pytest.mark.parametrize(
    ("code", "status"),
    [("pass", 0), ("raise SystemExit(7)", 7), ("import os, signal; os.kill(os.getpid(), 9)", -9)],
)
def test_exit_statuses_arrive_as_asyncio_reports_them(code: str, status: int):
    asyncio.set_child_watcher(childwatch.PidfdWatcher())
    assert asyncio.run(exit_status(code)) == status


def test_loops_in_other_threads_watch_their_own_children():
    use_pidfd()
    results: list[int] = []

    def in_a_thread(code: int) -> None:
        results.append(asyncio.run(exit_status(f"raise SystemExit({code})")))

    threads = [threading.Thread(target=in_a_thread, args=(code,)) for code in (3, 4)]
    for thread in threads:
        thread.start()
    main = asyncio.run(exit_status("raise SystemExit(5)"))
    for thread in threads:
        thread.join(timeout=30)
    assert sorted([*results, main]) == [3, 4, 5]
