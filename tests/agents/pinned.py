"""What the real-CLI harnesses share: finding the pinned agent CLIs, the rule for a missing
one (skip the test locally, fail it in CI: env ``CI`` set, with the command that installs
it), a session's root folder and a finished run's JSON lines."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any, NoReturn

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
NODE_MODULES = REPO_ROOT / "node_modules"


def npm_bin(package_dir: Path, command: str, fallback: str) -> Path:
    """The ``command`` a pinned npm package installs, as its package.json ``bin`` names it
    (``fallback``, relative to the package, when that cannot be read). The shared
    ``node_modules/.bin`` is not used: npm links only one of several packages that declare
    the same command."""
    try:
        manifest = json.loads((package_dir / "package.json").read_text())
        return package_dir / str(manifest["bin"][command])
    except (OSError, ValueError, KeyError, TypeError):
        return package_dir / fallback


def configured_or_pinned(bin_env: str, pinned: Path) -> Path | None:
    """``$bin_env`` if set, else the pinned binary; None if it is not an executable file."""
    configured = os.environ.get(bin_env)
    binary = Path(configured) if configured else pinned
    return binary if binary.is_file() and os.access(binary, os.X_OK) else None


def missing_hint(product: str, version: str, bin_env: str) -> str:
    """What a test says when the pinned CLI is missing."""
    return (
        f"the pinned {product} {version} is missing (looked at ${bin_env}, else"
        " node_modules): run `npm ci` in the repository root"
    )


def required(binary: Path | None, hint: str) -> Path:
    """``binary``; without one the test is skipped, or failed in CI."""
    if binary is None:
        missing(hint)
    return binary


def missing(hint: str) -> NoReturn:
    """Skip the test for a missing CLI, or fail it in CI."""
    if os.environ.get("CI"):
        pytest.fail(hint)
    pytest.skip(hint)


def hermetic_path() -> str:
    """The PATH of a hermetic CLI run: this Python's bin dir, then the caller's PATH."""
    return os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])


def run_ralphctl(
    env: Mapping[str, str], cwd: Path, database: Path, *args: str, timeout: float
) -> subprocess.CompletedProcess[str]:
    """``python -m ralphctl ARGS`` in ``cwd`` with a session's environment, the database
    ``database`` and no user config file."""
    return subprocess.run(
        [sys.executable, "-m", "ralphctl", *args],
        env={**env, "RALPHCTL_DB": str(database), "RALPHCTL_CONFIG": "/nonexistent.toml"},
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


@contextmanager
def session_root(root: Path | None, prefix: str) -> Iterator[Path]:
    """``root``, or (None) a temporary folder named with ``prefix``, removed afterwards."""
    if root is not None:
        yield root
        return
    with tempfile.TemporaryDirectory(prefix=prefix) as made:
        yield Path(made)


@dataclass(frozen=True)
class JsonLinesRun:
    """One finished CLI process that prints one JSON object a line: its exit status and raw
    output."""

    argv: Sequence[str]
    exit_code: int
    stdout: bytes
    stderr: str

    @cached_property
    def events(self) -> list[dict[str, Any]]:
        """stdout parsed line by line."""
        return [json.loads(line) for line in self.stdout.splitlines() if line.strip()]

    def of_type(self, type_: str) -> list[dict[str, Any]]:
        return [e for e in self.events if e.get("type") == type_]
