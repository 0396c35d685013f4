"""The figures of the reliability tests (counts tried, failures, worst latency, peak RSS),
collected over the session and printed as one table at its end (``tests/conftest.py``).

A test records through the ``figures`` fixture; what it does not measure stays empty.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Figure:
    """What one reliability test tried and measured."""

    test: str
    tried: int
    what: str  # what ``tried`` counts: "kills", "requests", "cases", ...
    failures: int = 0
    worst_s: float | None = None
    peak_rss_mb: float | None = None
    note: str = ""


RECORDED: list[Figure] = []
HEADER = ("reliability test", "tried", "failures", "worst latency", "peak RSS", "notes")


def record(figure: Figure) -> None:
    RECORDED.append(figure)


def cells(figure: Figure) -> tuple[str, ...]:
    worst = "" if figure.worst_s is None else f"{figure.worst_s * 1000:,.0f} ms"
    rss = "" if figure.peak_rss_mb is None else f"{figure.peak_rss_mb:,.1f} MB"
    tried = f"{figure.tried:,} {figure.what}"
    return (figure.test, tried, str(figure.failures), worst, rss, figure.note)


def table(figures: list[Figure]) -> list[str]:
    """The figures as aligned text lines, a header first."""
    rows = [HEADER, *(cells(f) for f in figures)]
    widths = [max(len(row[i]) for row in rows) for i in range(len(HEADER))]
    return [
        "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in rows
    ]
