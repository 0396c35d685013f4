"""``/api/loops/{id}/messages``: tell a loop's agent something, and read what was told.

A message goes into the agent's next prompt (fresh mode) or the next Stop's continue message
(same-session mode), exactly once; a loop waiting for an answer to its agent's question takes
it as the answer (``engine.steering``).
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, status
from pydantic import BaseModel, Field
from starlette.concurrency import run_in_threadpool

from ralphctl.domain.steering import MAX_MESSAGE_CHARS
from ralphctl.engine.steering import messages_json
from ralphctl.server.api.deps import ManagerDep, StoreDep
from ralphctl.server.api.loops import LoopId
from ralphctl.server.errors import error_responses

router = APIRouter(prefix="/api/loops", tags=["loops"])

MAX_SENDER_CHARS = 100


class MessageCreate(BaseModel):
    """A message for the loop's agent."""

    text: str = Field(
        min_length=1,
        max_length=MAX_MESSAGE_CHARS,
        pattern=r"\S",
        description="What to tell the agent (not only white space).",
    )
    sender: Annotated[str, Field(min_length=1, max_length=MAX_SENDER_CHARS)] = Field(
        default="api", description="Who sends it, as history shows it."
    )


class MessageOut(BaseModel):
    """A message and whether the agent has been given it."""

    seq: int = Field(ge=1, description="The seq of its ``message`` event.")
    text: str
    sender: str
    at: str = Field(description="When it was sent (ISO 8601, UTC).")
    delivered: bool = Field(description="An iteration's prompt or continue message carried it.")
    iteration: int | None = Field(default=None, description="The iteration it went to.")


@router.post(
    "/{loop_id}/messages",
    status_code=status.HTTP_201_CREATED,
    responses=error_responses(404, 409),
)
async def tell_loop(loop_id: LoopId, body: MessageCreate, manager: ManagerDep) -> MessageOut:
    """Tell the loop's agent something (409 once the loop has completed)."""
    told = await manager.tell(loop_id, body.text, body.sender)
    text, sender = told.data["text"], told.data["sender"]
    at = told.timestamp.isoformat()
    return MessageOut(seq=told.seq, text=text, sender=sender, at=at, delivered=False)


@router.get("/{loop_id}/messages", responses=error_responses(404))
async def list_messages(loop_id: LoopId, store: StoreDep) -> list[MessageOut]:
    """Every message of the loop, oldest first."""
    loop = await run_in_threadpool(store.get_loop, loop_id)
    found = await run_in_threadpool(messages_json, store, loop.id)
    return [MessageOut(**message) for message in found]
