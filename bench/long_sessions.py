"""Long sessions in each JSON-lines agent's own format, for the parser throughput benchmark.

A real 200 MB stream is a long session whose bytes are mostly tool output: files read,
written or printed. Each session here is one of the agent's recorded runs
(tests/agents/cassettes/<agent>/) whose tool turn is repeated a few times, every copy's
tool-output fields (the keys the agent puts a tool's output or a written file in) holding a
real source file from the standard library. Every line keeps the recorded shape and keys.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import orjson

CASSETTES = Path(__file__).parents[1] / "tests" / "agents" / "cassettes"


def source_corpus() -> list[str]:
    """Real source files to quote in tool output: the standard library's own."""
    stdlib = Path(json.__file__).parent.parent
    files = sorted(stdlib.glob("*.py"))
    return [f.read_text(encoding="utf-8", errors="replace") for f in files if f.stat().st_size]


def numbered(text: str) -> str:
    """A file as a Read tool shows it: right-aligned line numbers and a tab."""
    return "".join(f"{n:>6}\t{line}\n" for n, line in enumerate(text.splitlines(), 1))


@dataclass(frozen=True)
class Recipe:
    """How to grow one recorded run into a long session.

    ``turn`` is the slice of the run's lines that make one tool turn (repeated); in those
    lines whose ``type`` is in ``tool_types``, every string under a key in ``keys``
    (at any depth) becomes the turn's file. The strings under ``ids`` (the tool call's id)
    get the turn's number, so that every turn is a call of its own.
    """

    cassette: str
    turn: slice
    tool_types: frozenset[str]
    keys: frozenset[str]
    ids: frozenset[str]

    @property
    def ids_only(self) -> Recipe:
        return Recipe(self.cassette, self.turn, self.tool_types, frozenset(), self.ids)


RECIPES: dict[str, Recipe] = {
    "codex": Recipe(
        "codex/shell_command.jsonl",
        slice(2, 5),
        frozenset({"item.completed"}),
        frozenset({"aggregated_output"}),
        frozenset({"id"}),
    ),
    "gemini": Recipe(
        "gemini/write_file.jsonl",
        slice(2, 5),
        frozenset({"tool_use"}),
        frozenset({"content"}),
        frozenset({"tool_id"}),
    ),
    "opencode": Recipe(
        "opencode/bash_command.jsonl",
        slice(0, 3),
        frozenset({"tool_use"}),
        frozenset({"output"}),
        frozenset({"callID", "id"}),
    ),
    "copilot": Recipe(
        "copilot/shell_command.jsonl",
        slice(4, 41),
        frozenset(
            {"tool.shell_output", "tool.execution_partial_result", "tool.execution_complete"}
        ),
        frozenset({"text", "partialOutput", "content", "detailedContent"}),
        frozenset({"toolCallId"}),
    ),
    "amp": Recipe(
        "amp/edit_and_test.jsonl",
        slice(2, 4),
        frozenset({"user"}),
        frozenset({"content"}),
        frozenset({"id", "tool_use_id"}),
    ),
    "cursor": Recipe(
        "cursor/read_write.jsonl",
        slice(2, 5),
        frozenset({"tool_call"}),
        frozenset({"content"}),
        frozenset({"call_id", "toolCallId"}),
    ),
}


def _filled(value: object, recipe: Recipe, text: str, turn: int) -> object:
    """``value`` with the strings under ``recipe.keys`` replaced by ``text`` and those under
    ``recipe.ids`` made the turn's own."""
    if isinstance(value, dict):
        out: dict[str, object] = {}
        for key, item in value.items():
            if isinstance(item, str) and key in recipe.keys:
                out[key] = text
            elif isinstance(item, str) and key in recipe.ids:
                out[key] = f"{item}_{turn}"
            else:
                out[key] = _filled(item, recipe, text, turn)
        return out
    if isinstance(value, list):
        return [_filled(item, recipe, text, turn) for item in value]
    return value


def session(recipe: Recipe, corpus: list[str], rng: random.Random) -> Iterator[bytes]:
    """One long run: the recorded head, 4 to 12 tool turns on real files, the recorded tail."""
    path = CASSETTES / recipe.cassette
    records = [orjson.loads(line) for line in path.read_bytes().splitlines() if line.strip()]
    head, turn, tail = (
        records[: recipe.turn.start],
        records[recipe.turn],
        records[recipe.turn.stop :],
    )
    yield from map(orjson.dumps, head)
    for number in range(rng.randint(4, 12)):
        text = numbered(rng.choice(corpus))
        for record in turn:
            tool = record.get("type") in recipe.tool_types
            filled = _filled(record, recipe if tool else recipe.ids_only, text, number)
            yield orjson.dumps(filled)
    yield from map(orjson.dumps, tail)


def long_sessions(agent: str, target_bytes: int) -> list[list[bytes]]:
    """Sessions of ``agent`` up to ``target_bytes``, one list of lines per session."""
    recipe = RECIPES[agent]
    corpus = source_corpus()
    rng = random.Random(20261123)
    runs: list[list[bytes]] = []
    total = 0
    while total < target_bytes:
        run = list(session(recipe, corpus, rng))
        runs.append(run)
        total += sum(map(len, run))
    return runs
