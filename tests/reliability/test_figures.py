"""The reliability figures print as one aligned table, empty where nothing was measured."""

from __future__ import annotations

from tests.reliability.figures import Figure, table


def test_the_table_aligns_every_column_and_leaves_unmeasured_cells_empty():
    lines = table(
        [
            Figure("hook fuzz", 25_800, "cases", worst_s=0.0284),
            Figure("agent output", 1, "run", peak_rss_mb=70.06, note="a 500 MB line"),
        ]
    )

    assert lines == [
        "reliability test  tried         failures  worst latency  peak RSS  notes",
        "hook fuzz         25,800 cases  0         28 ms",
        "agent output      1 run         0                        70.1 MB   a 500 MB line",
    ]
