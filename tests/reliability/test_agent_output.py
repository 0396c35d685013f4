"""Whatever the agent prints, the runner's memory stays bounded (issue 10, item 8).

A runner process runs one iteration of an agent that prints garbage, NUL bytes, invalid UTF-8
and one 500 MB line (generated as it is printed, never stored), then its ``result`` line. The
runner's peak RSS must stay under 100 MB, the cost must still be read, and the transcript must
hold every byte. ``RALPHCTL_NOISY_LINE_MB`` changes the size of the long line.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from ralphctl.store.repository import Store
from ralphctl.store.transcript_chunks import transcript_sizes
from tests.reliability.figures import Figure

ROOT = Path(__file__).parents[2]
AGENT = Path(__file__).with_name("noisy_agent.py")
LINE_MB = int(os.environ.get("RALPHCTL_NOISY_LINE_MB", "500"))
MAX_RSS_MB = 100
#: What the noisy agent prints besides the long line (its init, garbage and result lines).
PROLOGUE = (
    b'{"type":"system","subtype":"init","session_id":"noisy","model":"noisy"}\n'
    b"garbage: not json at all {\n\x00\x00\x00 NUL bytes\n\xff\xfe\xc3 invalid UTF-8\n"
)


def claude_stand_in(tmp_path: Path, program: Path) -> Path:
    wrapper = tmp_path / "claude"
    wrapper.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{program}" "$@"\n')
    wrapper.chmod(0o755)
    return wrapper


@pytest.mark.timeout(240)
def test_a_500_mb_line_and_garbage_keep_the_runner_under_100_mb(
    tmp_path: Path, figures: Callable[[Figure], None]
) -> None:
    workdir = tmp_path / "work"
    workdir.mkdir()
    url = str(tmp_path / "ralphctl.db")
    env = {
        **os.environ,
        "RALPHCTL_CLAUDE_BIN": str(claude_stand_in(tmp_path, AGENT)),
        "NOISY_LINE_BYTES": str(LINE_MB * 1024 * 1024),
    }

    child = subprocess.run(
        [sys.executable, "-m", "tests.reliability.one_loop", url, str(workdir), "noisy-1", "1"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=220,
        check=False,
    )

    assert child.returncode == 0, child.stderr
    report = json.loads(child.stdout.splitlines()[-1])
    note = f"garbage, NUL bytes, invalid UTF-8 and a {LINE_MB} MB line"
    figures(Figure("agent output", 1, "run", peak_rss_mb=report["peak_rss_mb"], note=note))
    assert report["peak_rss_mb"] < MAX_RSS_MB
    with Store.open(url) as store:
        (iteration,) = store.iterations("noisy-1")
        messages = [e.data.get("message", "") for e in store.events_since(0, "noisy-1")]
        raw_bytes, stored_bytes = transcript_sizes(store, "noisy-1")[1]
    assert (iteration.status, iteration.cost_usd) == ("ok", 0.5)  # the result line after it
    assert any("1 output line(s) longer than 8 MiB were not parsed" in m for m in messages)
    result_line_bytes = raw_bytes - len(PROLOGUE) - LINE_MB * 1024 * 1024 - 1
    assert 100 < result_line_bytes < 300  # every byte of the long line is in the transcript
    assert stored_bytes < raw_bytes / 100
