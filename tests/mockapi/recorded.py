"""What the CLI sent: one record per HTTP request, with helpers to read the conversation."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class RecordedRequest:
    """One request as received. ``turn`` is the script index it consumed (None: side request)."""

    method: str
    path: str
    headers: Mapping[str, str]
    body: Mapping[str, Any]
    turn: int | None = None
    exhausted: bool = False

    @property
    def scripted(self) -> bool:
        return self.turn is not None

    @property
    def messages(self) -> list[dict[str, Any]]:
        return list(self.body.get("messages") or [])

    def header(self, name: str) -> str | None:
        """A header by case-insensitive name."""
        wanted = name.lower()
        return next((v for k, v in self.headers.items() if k.lower() == wanted), None)

    def user_texts(self) -> list[str]:
        """Every text block (or string content) of the ``user`` messages, in order."""
        texts: list[str] = []
        for message in self.messages:
            if message.get("role") == "user":
                texts.extend(_texts(message.get("content")))
        return texts

    def system_texts(self) -> list[str]:
        """The ``system`` blocks plus mid-conversation ``role: system`` messages."""
        texts = _texts(self.body.get("system"))
        for message in self.messages:
            if message.get("role") == "system":
                texts.extend(_texts(message.get("content")))
        return texts

    def tool_results(self) -> list[dict[str, Any]]:
        """Every ``tool_result`` block the CLI sent back, in order."""
        return [
            block
            for message in self.messages
            if message.get("role") == "user" and isinstance(message.get("content"), list)
            for block in message["content"]
            if block.get("type") == "tool_result"
        ]

    def tool_names(self) -> list[str]:
        return [tool.get("name", "") for tool in self.body.get("tools") or []]


def _texts(content: Any) -> list[str]:
    if isinstance(content, str):
        return [content]
    if isinstance(content, list):
        return [b["text"] for b in content if isinstance(b, dict) and b.get("type") == "text"]
    return []
