"""What every ``record_cassettes`` script shares: choosing the scenarios, and writing one
recorded run as a cassette (stdout), its side files and a sidecar ``<name>.json``.

The scripts themselves keep what differs: how a scenario is played against the real CLI.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import NoReturn, Protocol

STDERR_TAIL = 2000


class Recorded(Protocol):
    """A finished run of a real CLI, as the harnesses give it."""

    @property
    def argv(self) -> Sequence[str]: ...
    @property
    def exit_code(self) -> int: ...
    @property
    def stdout(self) -> bytes: ...
    @property
    def stderr(self) -> str: ...


def require_binary(binary: Path | None, install_hint: str) -> Path:
    """The pinned binary; exits 1 with the install hint when it is not installed."""
    if binary is None:
        _exit(1, install_hint)
    return binary


def chosen_names(names: Sequence[str], scenarios: Collection[str]) -> list[str]:
    """The scenarios to record: those named, else all; exits 2 naming any unknown one."""
    if unknown := sorted(set(names) - set(scenarios)):
        _exit(2, f"unknown scenarios: {', '.join(unknown)}")
    return list(names) or list(scenarios)


def save_run(
    folder: Path,
    name: str,
    shows: str,
    run: Recorded,
    *,
    stdout_suffix: str,
    program: str,
    version: tuple[str, object],
    side_files: Mapping[str, bytes | None] | None = None,
    extra: Mapping[str, object] | None = None,
) -> None:
    """Write ``<name><stdout_suffix>`` (stdout), each side file ``<name><suffix>`` (removed
    when the run wrote none) and the sidecar ``<name>.json``: the scenario, what it shows, the
    argv (``program`` for the binary's path), ``extra``, the exit code, the stderr tail and
    the CLI's version under its key."""
    (folder / f"{name}{stdout_suffix}").write_bytes(run.stdout)
    for suffix, content in (side_files or {}).items():
        path = folder / f"{name}{suffix}"
        if content is not None:
            path.write_bytes(content)
        else:
            path.unlink(missing_ok=True)
    version_key, version_value = version
    sidecar = {
        "scenario": name,
        "shows": shows,
        "argv": [program, *run.argv[1:]],
        **(extra or {}),
        "exit_code": run.exit_code,
        "stderr_tail": run.stderr[-STDERR_TAIL:],
        version_key: version_value,
    }
    (folder / f"{name}.json").write_text(json.dumps(sidecar, indent=2) + "\n")


def _exit(code: int, message: str) -> NoReturn:
    print(message, file=sys.stderr)
    raise SystemExit(code)
