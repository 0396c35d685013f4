"""Event delivery latency to 20 WebSocket clients while N loops run under one server.

A server process (the app and its loop manager, served by uvicorn as ``ralphctl serve`` does)
runs N loops of a minimal fake agent, ITERATIONS iterations each (cooldown 0, no checkpoints),
all created at once through the REST API. Each agent run edits nothing and waits 0.5-1.5 s
(loop i waits AGENT_WAITS_S[i % 5]), as a real agent waits on its model. Two agents:

    scripted    the scripted agent: a Python process per iteration (as bench/manager_scale.py)
    canned      its output, recorded once, replayed by sh: no Python start-up per iteration,
                so that the agents' CPU does not hide the server's share

CLIENTS WebSocket clients in another process follow ``/ws/events`` from before the first loop
is created until every loop has ended. The latency of one delivery is the time it was
received minus the event's stored ``timestamp`` (taken in the transaction that stores it;
same machine, same clock). A client dropped for being slow reconnects with ``since``, and its
replayed events count with their real, longer latency.

    events      events stored while the loops ran
    deliveries  events received, over all clients (events x clients when none was dropped)
    p50 / p99   delivery latency percentiles, and the worst one
    drops       clients disconnected for reading too slowly (each reconnected)

Budget at N = 500 (printed, never asserted): p99 <= 100 ms.

    .venv/bin/python bench/server_events.py [N ...]      # default: 50 200 500
"""

from __future__ import annotations

import asyncio
import json
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ralphctl.agents.base import AgentAdapter
    from ralphctl.domain.config import LoopConfig

DEFAULT_SIZES = (50, 200, 500)
CLIENTS = 20
ITERATIONS = 3
AGENT_WAITS_S = (0.5, 0.75, 1.0, 1.25, 1.5)  # loop i waits AGENT_WAITS_S[i % 5]
CREATORS = 8  # concurrent POST /api/loops
AGENTS = ("scripted", "canned")
TOKEN = "bench-token-0123456789"
ENDED = {"completed", "stopped", "failed", "blocked"}
STEP = {"text": "nothing to do", "cost_usd": 0.0001, "tokens": {"input": 10, "output": 1}}


def serve(n: int, root: Path, agent: str) -> None:
    """The server process: prints its port, then serves until killed."""
    import uvicorn

    from ralphctl.engine.manager import LoopManager
    from ralphctl.server.app import UVICORN_OPTIONS, create_app
    from ralphctl.store.repository import Store

    store = Store.open(str(root / "ralphctl.db"))
    factory = canned_adapter(root) if agent == "canned" else None
    manager = LoopManager(store, max_concurrent=n, event_retention=None, adapter_factory=factory)
    listener = socket.create_server(("127.0.0.1", 0))
    print(listener.getsockname()[1], flush=True)
    config = uvicorn.Config(create_app(store, manager, TOKEN), **UVICORN_OPTIONS)
    uvicorn.Server(config).run(sockets=[listener])


def canned_adapter(root: Path) -> Callable[[LoopConfig], AgentAdapter]:
    """Adapters replaying the scripted agent's output, recorded once, with sh: no Python
    start-up per iteration, so that the agents' CPU does not hide the server's share."""
    from ralphctl.agents.base import AgentCommand, AgentRequest
    from ralphctl.agents.scripted import ScriptedAdapter

    script = root / "instant.json"
    script.write_text(json.dumps({"steps": [STEP]}))
    recorded = root / "canned.jsonl"
    with recorded.open("wb") as out:
        subprocess.run(
            [sys.executable, "-m", "ralphctl.agents.scripted_agent", str(script)],
            input=b"prompt",
            stdout=out,
            check=True,
            cwd=root,
        )

    class Canned(ScriptedAdapter):
        def build_command(self, request: AgentRequest) -> AgentCommand:
            wait = json.loads(self.script.read_text())["steps"][0]["sleep_s"]
            shell = f"cat > /dev/null; sleep {wait}; cat {recorded}"
            return AgentCommand(argv=["sh", "-c", shell], stdin=request.prompt.encode())

    return lambda config: Canned(str(config.script))


class Follower:
    """One WebSocket client: records each event's latency; reconnects after a drop."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.latencies: list[float] = []
        self.seqs: set[int] = set()
        self.ended = 0
        self.last_seq: int | None = None
        self.drops = 0
        self.ready = asyncio.Event()

    async def follow(self, loops: int) -> None:
        from websockets.asyncio.client import connect
        from websockets.exceptions import ConnectionClosed

        while self.ended < loops:
            query = "" if self.last_seq is None else f"&since={self.last_seq}"
            try:
                async with connect(f"{self.url}/ws/events?token={TOKEN}{query}") as socket:
                    async for message in socket:
                        received = time.time()
                        event = json.loads(message)
                        if event["event_type"] == "snapshot":
                            self.last_seq = self.last_seq or event["data"]["last_seq"]
                            self.ready.set()
                            continue
                        stored = datetime.fromisoformat(event["timestamp"]).timestamp()
                        self.latencies.append(received - stored)
                        self.last_seq = event["seq"]
                        self.seqs.add(event["seq"])
                        self.ended += event["event_type"] in ENDED
                        if self.ended >= loops:
                            return
            except ConnectionClosed as closed:
                if closed.rcvd is None or closed.rcvd.code != 1013:
                    raise
                self.drops += 1


async def drive(n: int, url: str, root: Path) -> dict[str, float]:
    from ralphctl.server.client import Client

    scripts = [root / f"script-{k}.json" for k in range(len(AGENT_WAITS_S))]
    for script, wait in zip(scripts, AGENT_WAITS_S, strict=True):
        script.write_text(json.dumps({"steps": [{**STEP, "sleep_s": wait}]}))
    ws_url = url.replace("http://", "ws://")
    followers = [Follower(ws_url) for _ in range(CLIENTS)]
    following = [asyncio.create_task(f.follow(n)) for f in followers]
    await asyncio.gather(*(f.ready.wait() for f in followers))
    client = Client(url, TOKEN, timeout_s=600)
    slots = asyncio.Semaphore(CREATORS)

    async def create(i: int) -> None:
        workdir = root / f"work-{i}"
        workdir.mkdir()
        body = {
            "task": "benchmark",
            "workdir": str(workdir),
            "agent": "scripted",
            "script": str(scripts[i % len(scripts)]),
            "max_iterations": ITERATIONS,
            "cooldown": 0,
            "config": {"checkpoint_interval": 0, "no_progress_threshold": False},
        }
        async with slots:
            await asyncio.to_thread(client.post, "/api/loops", body)

    wall = time.perf_counter()
    await asyncio.gather(*(create(i) for i in range(n)))
    await asyncio.gather(*following)
    wall = time.perf_counter() - wall
    latencies = sorted(ms for f in followers for ms in (1000 * s for s in f.latencies))
    return {
        "n": n,
        "events": len(set().union(*(f.seqs for f in followers))),
        "deliveries": len(latencies),
        "p50_ms": statistics.median(latencies),
        "p99_ms": latencies[int(0.99 * (len(latencies) - 1))],
        "max_ms": latencies[-1],
        "drops": sum(f.drops for f in followers),
        "wall_s": wall,
    }


def one(n: int, agent: str) -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="ralphctl-bench-") as tmp:
        root = Path(tmp)
        server = subprocess.Popen(
            [sys.executable, __file__, "--serve", str(n), tmp, agent],
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            assert server.stdout is not None
            port = int(server.stdout.readline())
            return asyncio.run(drive(n, f"http://127.0.0.1:{port}", root))
        finally:
            server.kill()
            server.wait()


def main(sizes: list[int]) -> None:
    print(
        f"{CLIENTS} WebSocket clients; {ITERATIONS} iterations per loop, the agent waiting"
        f" 0.5-1.5 s in each; all loops created at once; budget at N = 500: p99 <= 100 ms"
    )
    print(
        f"{'N':>5} {'agent':>8} {'events':>7} {'deliveries':>10} {'p50 ms':>8} {'p99 ms':>8}"
        f" {'max ms':>8} {'drops':>6} {'wall s':>7}"
    )
    for n in sizes:
        for agent in AGENTS:
            r = one(n, agent)
            print(
                f"{r['n']:>5} {agent:>8} {r['events']:>7} {r['deliveries']:>10} {r['p50_ms']:>8.1f}"
                f" {r['p99_ms']:>8.1f} {r['max_ms']:>8.1f} {r['drops']:>6} {r['wall_s']:>7.1f}",
                flush=True,
            )


if __name__ == "__main__":
    if sys.argv[1:2] == ["--serve"]:
        serve(int(sys.argv[2]), Path(sys.argv[3]), sys.argv[4])
    else:
        main([int(arg) for arg in sys.argv[1:]] or list(DEFAULT_SIZES))
