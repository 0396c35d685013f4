"""The fleet worker's systemd unit (``fleet/assets/ralphctl-worker@.service``) passes
``systemd-analyze verify`` with no warning, and asks for what a drain needs."""

from __future__ import annotations

import shutil
import subprocess
import sys
from importlib.resources import files
from pathlib import Path

import pytest

UNIT = "ralphctl-worker@.service"
INSTALLED_AT = "/usr/local/bin/ralphctl"


def unit_text() -> str:
    return files("ralphctl.fleet").joinpath("assets", UNIT).read_text()


@pytest.mark.skipif(
    shutil.which("systemd-analyze") is None,
    reason="systemd-analyze missing and scripts/ensure-systemd found no apt-get to install it",
)
def test_the_worker_unit_passes_systemd_analyze_verify(tmp_path: Path) -> None:
    ralphctl = Path(sys.executable).with_name("ralphctl")  # verify needs ExecStart to exist
    unit = tmp_path / "ralphctl-worker@build-01.service"
    unit.write_text(unit_text().replace(INSTALLED_AT, str(ralphctl)))

    done = subprocess.run(
        ["systemd-analyze", "verify", str(unit)], capture_output=True, text=True, check=False
    )

    assert done.returncode == 0, done.stderr
    assert done.stderr.strip() == "", "no setting ignored"


def test_the_worker_unit_restarts_always_and_stops_by_draining() -> None:
    settings = dict(
        line.split("=", 1)
        for line in unit_text().splitlines()
        if "=" in line[:30] and line[0] != "#"
    )
    assert settings["ExecStart"].startswith(f"{INSTALLED_AT} worker --name %H-%i")
    assert settings["Restart"] == "always"
    assert settings["KillSignal"] == "SIGTERM"
    assert settings["KillMode"] == "mixed", "SIGTERM to the worker only: it stops its agents"
    assert int(settings["TimeoutStopSec"]) > 60, "longer than the worker's --drain 60s"
    assert "/etc/ralphctl/worker.env" in unit_text()
