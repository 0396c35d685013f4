"""``GET /api/loops/{id}/iterations/{n}/transcript``: an iteration's output, raw or as text,
streamed from the store; a clear 404 or 422 for what does not exist or cannot be."""

from __future__ import annotations

import json

import pytest
from fastapi.testclient import TestClient

from ralphctl.store.repository import Store
from ralphctl.store.transcript_chunks import append_chunk
from tests.store.factories import new_loop, started_iteration

RESULT = {"type": "result", "is_error": False, "result": "done", "total_cost_usd": 0.25}
OUTPUT = [
    b'{"type":"system","subtype":"init","session_id":"s-1"}\n',
    b"a stray line <b>not html</b>\n",
    json.dumps(RESULT).encode() + b"\n",
]


@pytest.fixture
def api(any_client: TestClient, store: Store) -> TestClient:
    """Loop cccc3333 with iteration 1 (output in three chunks) and iteration 2 (none kept)."""
    store.create_loop(new_loop("cccc3333"))
    for n in (1, 2):
        store.begin_iteration(started_iteration("cccc3333", n))
    for seq, chunk in enumerate(OUTPUT):
        append_chunk(store, "cccc3333", 1, seq, chunk)
    return any_client


def test_the_raw_transcript_is_the_agent_s_output_byte_for_byte(api: TestClient) -> None:
    answer = api.get("/api/loops/cccc/iterations/1/transcript", params={"format": "raw"})

    assert answer.status_code == 200
    assert answer.headers["content-type"] == "application/x-ndjson"
    assert answer.content == b"".join(OUTPUT)


def test_the_text_transcript_reads_as_the_terminal_shows_it(api: TestClient) -> None:
    answer = api.get("/api/loops/cccc3333/iterations/1/transcript")

    assert answer.status_code == 200
    assert answer.headers["content-type"] == "text/plain; charset=utf-8"
    assert answer.text == (
        "── session s-1\na stray line <b>not html</b>\n── finished: ok · $0.25\n"
    )


def test_an_iteration_without_recorded_output_is_an_empty_transcript(api: TestClient) -> None:
    answer = api.get("/api/loops/cccc3333/iterations/2/transcript")

    assert (answer.status_code, answer.text) == (200, "")


@pytest.mark.parametrize(
    ("path", "detail"),
    [
        ("/api/loops/nope1234/iterations/1/transcript", "no loop with id 'nope1234'"),
        ("/api/loops/cccc3333/iterations/3/transcript", "loop cccc3333 has no iteration 3"),
    ],
)
def test_a_missing_loop_or_iteration_is_a_404_saying_which(
    api: TestClient, path: str, detail: str
) -> None:
    answer = api.get(path)

    assert answer.status_code == 404
    assert answer.json() == {"detail": detail}


@pytest.mark.parametrize(
    "query",
    ["iterations/0/transcript", "iterations/x/transcript", "iterations/1/transcript?format=html"],
)
def test_a_bad_iteration_or_format_is_a_422(api: TestClient, query: str) -> None:
    answer = api.get(f"/api/loops/cccc3333/{query}")

    assert answer.status_code == 422


def test_the_route_is_described_with_its_formats_and_errors(api: TestClient) -> None:
    operation = api.get("/openapi.json").json()["paths"][
        "/api/loops/{loop_id}/iterations/{n}/transcript"
    ]["get"]

    assert set(operation["responses"]["200"]["content"]) == {"text/plain", "application/x-ndjson"}
    assert {"401", "404", "422", "503"} <= set(operation["responses"])
