"""Throughput of each agent's stream parser, against ``orjson.loads`` per line in the same run.

Per adapter (through the registry, so adapters that land later are measured too), two
streams of ~200 MB, each fed line by line to a new parser per agent run:

- a long session (the budget figure): the agent's own format with tool turns that read, write
  or print real source files, so the bytes sit in tool-output lines as in real use
  (bench/long_sessions.py, bench/claude_long_session.py);
- its recorded runs repeated (tests/agents/cassettes/<agent>/*.jsonl or *.txt): tiny one-turn
  runs whose per-line fixed costs dominate, the worst case.

Every line is a distinct copy, so the CPU caches see 200 MB as with a real stream. Budget
(printed, never asserted): >= 300 MB/s on the long session for a JSON-lines format, >= the
speed of ``orjson.loads`` per line on the recorded runs for a text format (which has no long
session). An agent without a recorded stream is skipped, saying so.

    .venv/bin/python bench/parse_throughput.py [MB] [--agent NAME]
                                                (or RALPHCTL_BENCH_MB; default 200)
"""

from __future__ import annotations

import argparse
import os
import time
from dataclasses import dataclass

import orjson

from claude_long_session import claude_sessions
from long_sessions import CASSETTES, RECIPES, long_sessions, source_corpus
from ralphctl.agents.registry import all_specs, spec_for
from ralphctl.agents.spec import AgentSpec

BUDGET_MB_S = 300.0
ROUNDS = 3


@dataclass(frozen=True)
class Figure:
    """One stream's size and the speeds of the parser and of ``orjson.loads`` on it."""

    megabytes: float
    parser: float
    orjson: float

    def __str__(self) -> str:
        return (
            f"{self.megabytes:5.0f} MB {self.parser:6.0f} MB/s {self.orjson:6.0f} MB/s"
            f" {self.parser / self.orjson:5.2f}x"
        )


def recorded_runs(spec: AgentSpec) -> list[list[bytes]]:
    """The agent's recorded streams (what its CLI printed), one list of lines per recorded
    run. Where the runs have sidecars (``<run>.json``), the files without one are other
    records of a run (Aider's analytics log, Copilot's session events), not its output."""
    folder = CASSETTES / spec.name
    files = sorted([*folder.glob("*.jsonl"), *folder.glob("*.txt")]) if folder.is_dir() else []
    if any(path.with_suffix(".json").is_file() for path in files):
        files = [path for path in files if path.with_suffix(".json").is_file()]
    runs = [path.read_bytes().splitlines() for path in files]
    return [run for run in runs if run]


def repeated(runs: list[list[bytes]], target_bytes: int) -> list[list[bytes]]:
    """``runs`` repeated up to ``target_bytes``, every line a distinct copy."""
    out: list[list[bytes]] = []
    total = 0
    while total < target_bytes:
        for run in runs:
            out.append([bytes(bytearray(line)) for line in run])
            total += sum(len(line) for line in run)
    return out


def _loads_or_none(line: bytes) -> object:
    """``orjson.loads``, as a parser must take a line: one that is not JSON is no error."""
    try:
        return orjson.loads(line)
    except orjson.JSONDecodeError:
        return None


def json_lines(runs: list[list[bytes]]) -> bool:
    """Whether the format is JSON lines: nine recorded lines in ten at least are JSON (a
    recorded stream also keeps the noise a CLI prints around its events)."""
    lines = [line for run in runs for line in run if line.strip()]
    return sum(_loads_or_none(line) is not None for line in lines) >= 0.9 * len(lines)


def parser_mb_per_s(spec: AgentSpec, runs: list[list[bytes]], total: int) -> float:
    """The best of a few rounds of a new parser per run fed every line of it."""
    best = float("inf")
    for _ in range(ROUNDS):
        start = time.perf_counter()
        for run in runs:
            feed = spec.parser().feed
            for line in run:
                feed(line)
        best = min(best, time.perf_counter() - start)
    return total / best / 1e6


def orjson_mb_per_s(runs: list[list[bytes]], total: int) -> float:
    """The best of a few rounds of ``orjson.loads`` on every line."""
    lines = [line for run in runs for line in run]
    best = float("inf")
    for _ in range(ROUNDS):
        start = time.perf_counter()
        for line in lines:
            _loads_or_none(line)
        best = min(best, time.perf_counter() - start)
    return total / best / 1e6


def measure(spec: AgentSpec, runs: list[list[bytes]]) -> Figure:
    total = sum(len(line) for run in runs for line in run)
    return Figure(total / 1e6, parser_mb_per_s(spec, runs, total), orjson_mb_per_s(runs, total))


def generated_runs(name: str, target_bytes: int) -> list[list[bytes]] | None:
    """A long session of the agent's format, when there is a generator for it."""
    if name == "claude":
        return claude_sessions(source_corpus(), target_bytes)
    if name in RECIPES:
        return long_sessions(name, target_bytes)
    return None


def report(spec: AgentSpec, size_mb: float) -> None:
    recorded = recorded_runs(spec)
    if not recorded:
        print(f"{spec.name:<9} skipped: no recorded stream in {CASSETTES.name}/{spec.name}/")
        return
    target = int(size_mb * 1e6)
    worst = measure(spec, repeated(recorded, target))
    generated = generated_runs(spec.name, target)
    session = measure(spec, generated) if generated else None
    del generated
    if session is not None:
        budget, met = f">= {BUDGET_MB_S:.0f} MB/s", session.parser >= BUDGET_MB_S
    elif json_lines(recorded):
        budget, met = f">= {BUDGET_MB_S:.0f} MB/s (recorded)", worst.parser >= BUDGET_MB_S
    else:
        budget, met = ">= orjson.loads", worst.parser >= worst.orjson
    long = str(session) if session else f"{'(text format: none)':<39}"
    print(f"{spec.name:<9} {long} | {worst} | {budget}: {'met' if met else 'NOT met'}")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("mb", nargs="?", type=float, help="stream size in MB (default 200)")
    parser.add_argument("--agent", help="one adapter only")
    args = parser.parse_args()
    size_mb = args.mb or float(os.environ.get("RALPHCTL_BENCH_MB", "200"))
    specs = [spec_for(args.agent)] if args.agent else all_specs()
    print(
        f"streams of ~{size_mb:.0f} MB, a new parser per agent run; parser, orjson.loads per line"
    )
    side = f"{'stream':>8} {'parser':>11} {'orjson':>11} {'ratio':>6}"
    print(f"{'':<9} {'long session (budget)':<39} | {'recorded runs repeated (worst)':<39} |")
    print(f"{'agent':<9} {side} | {side} | budget")
    for spec in specs:
        report(spec, size_mb)


if __name__ == "__main__":
    main()
