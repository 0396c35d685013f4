"""The dashboard shows money exactly as the terminal does (``dom.js`` ``usd`` mirrors
``domain.money.format_usd``)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from ralphctl.domain.money import format_usd

DOM_JS = Path(__file__).parents[2] / "src" / "ralphctl" / "server" / "static" / "js" / "dom.js"
AMOUNTS = [0, 0.45000000000000007, 0.4217, 0.01, 12.3, 1234.5, 300, 0.0042, 0.007, 0.00013]
AMOUNTS += [0.009999, 0.000001, 4e-9, 0.0125, 0.999, 0.995, 1e6, -0.45, 7.123456789e-5]


@pytest.mark.skipif(shutil.which("node") is None, reason="needs node")
def test_the_dashboard_formats_every_amount_as_the_terminal_does() -> None:
    program = (
        f"const {{ usd }} = await import({json.dumps(DOM_JS.as_uri())});"
        f"console.log(JSON.stringify({json.dumps(AMOUNTS)}.map(usd)));"
    )
    done = subprocess.run(
        ["node", "--input-type=module", "-e", program],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    assert json.loads(done.stdout) == [format_usd(amount) for amount in AMOUNTS]
