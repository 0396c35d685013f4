"""``/api/loops/{id}/iterations/{n}/transcript``: what the agent printed in one iteration."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated, Literal

from fastapi import APIRouter, Query
from fastapi import Path as PathParam
from fastapi.responses import StreamingResponse

from ralphctl.engine.transcript_reader import (
    check_iteration,
    parser_for,
    transcript_lines,
    transcript_text,
)
from ralphctl.server.api.deps import StoreDep
from ralphctl.server.errors import ErrorBody
from ralphctl.store.transcript_chunks import iter_transcript

router = APIRouter(prefix="/api/loops", tags=["loops"])

MEDIA_TYPE = {"raw": "application/x-ndjson", "text": "text/plain; charset=utf-8"}

LoopId = Annotated[
    str, PathParam(description="A loop id, or a unique prefix of one (at least 4 characters).")
]
Iteration = Annotated[int, PathParam(ge=1, le=2**31 - 1, description="The iteration, from 1.")]
Format = Annotated[
    Literal["text", "raw"],
    Query(description="`text`: readable text; `raw`: the agent's output as printed."),
]


@router.get(
    "/{loop_id}/iterations/{n}/transcript",
    response_class=StreamingResponse,
    responses={
        200: {
            "description": "The iteration's output so far, streamed.",
            "content": {
                "text/plain": {"schema": {"type": "string"}},
                "application/x-ndjson": {"schema": {"type": "string"}},
            },
        },
        404: {"model": ErrorBody, "description": "No such loop, or it has no iteration `n`."},
    },
)
def get_transcript(
    loop_id: LoopId, n: Iteration, store: StoreDep, format: Format = "text"
) -> StreamingResponse:
    """Everything the agent printed in iteration ``n``, as stored so far (a running iteration's
    output grows): ``raw`` is the agent's stream exactly as printed (stream-json: one JSON
    object per line, with any stray line the agent printed kept as it was); ``text`` reads as
    the terminal shows it. Empty when nothing was recorded (an iteration from before
    transcripts were kept, or one removed by ``[loops] transcript_retention_days``)."""
    loop = store.get_loop(loop_id)
    check_iteration(store, loop, n)
    chunks = iter_transcript(store, loop.id, n)
    body: Iterator[bytes] | Iterator[str] = (
        chunks if format == "raw" else transcript_text(transcript_lines(chunks), parser_for(loop))
    )
    return StreamingResponse(body, media_type=MEDIA_TYPE[format])
