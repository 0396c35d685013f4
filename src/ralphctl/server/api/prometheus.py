"""``/metrics``: the Prometheus text exposition, read from the store at every scrape."""

from __future__ import annotations

from collections.abc import Iterator

from fastapi import APIRouter, Request, Response
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    generate_latest,
)
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from ralphctl.domain.states import LoopStatus
from ralphctl.server.errors import error_responses
from ralphctl.store import metrics
from ralphctl.store.repository import Store

router = APIRouter(tags=["metrics"])
TEXT = {"schema": {"type": "string"}}


class Telemetry:
    """One app's registry: the store's figures plus the WebSocket stream's own."""

    def __init__(self, store: Store) -> None:
        self.registry = CollectorRegistry()
        self.registry.register(StoreCollector(store))
        self.clients = Gauge(
            "ralphctl_websocket_clients", "Connected /ws/events clients", registry=self.registry
        )
        self.dropped = Counter(
            "ralphctl_websocket_dropped",
            "Clients disconnected for reading events too slowly",
            registry=self.registry,
        )


class StoreCollector(Collector):
    """Loops by status, iterations by status, total cost and tokens, the newest event seq."""

    def __init__(self, store: Store) -> None:
        self._store = store

    def collect(self) -> Iterator[Metric]:
        totals = metrics.totals(self._store)
        loops = GaugeMetricFamily("ralphctl_loops", "Loops by status", labels=["status"])
        for loop_status in LoopStatus:
            loops.add_metric([loop_status], totals.loops_by_status.get(loop_status, 0))
        yield loops
        iterations = CounterMetricFamily(
            "ralphctl_iterations", "Iterations recorded, by status", labels=["status"]
        )
        for status, count in sorted(totals.iterations_by_status.items()):
            iterations.add_metric([status], count)
        yield iterations
        yield CounterMetricFamily(
            "ralphctl_cost_usd", "Cost of every loop, in USD", value=totals.cost_usd
        )
        tokens = CounterMetricFamily("ralphctl_tokens", "Tokens of every loop", labels=["kind"])
        for kind, count in totals.tokens.items():
            tokens.add_metric([kind], count)
        yield tokens
        yield GaugeMetricFamily(
            "ralphctl_events_last_seq", "The newest stored event's seq", value=totals.last_seq
        )


@router.get(
    "/metrics",
    response_class=Response,
    responses={**error_responses(503), 200: {"content": {CONTENT_TYPE_LATEST: TEXT}}},
)
def prometheus(request: Request) -> Response:
    """Every figure in the Prometheus text format (scrape with a bearer token)."""
    telemetry: Telemetry = request.app.state.telemetry
    return Response(generate_latest(telemetry.registry), media_type=CONTENT_TYPE_LATEST)
