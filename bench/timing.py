"""Wall-clock and CPU time of child processes, for the benchmarks.

On a shared machine the wall clock also counts the time other processes held the CPU; the
CPU time (user + system of the child and everything it waited for) does not, so both are
printed.
"""

from __future__ import annotations

import resource
import statistics
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Cost:
    """Wall-clock and CPU time, in one unit (seconds, or ms after ``ms()``)."""

    wall: float
    cpu: float

    def __add__(self, other: Cost) -> Cost:
        return Cost(self.wall + other.wall, self.cpu + other.cpu)

    def __sub__(self, other: Cost) -> Cost:
        return Cost(self.wall - other.wall, self.cpu - other.cpu)

    def __truediv__(self, n: float) -> Cost:
        return Cost(self.wall / n, self.cpu / n)

    def ms(self) -> Cost:
        return Cost(self.wall * 1000, self.cpu * 1000)


def timed(command: list[str], cwd: Path, env: dict[str, str], expect: int = 0) -> tuple[Cost, str]:
    """Run ``command`` (stdout discarded); its cost in seconds and its stderr. Exit if its
    status is not ``expect``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    result = subprocess.run(
        command, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if result.returncode != expect:
        stderr = result.stderr.decode(errors="replace")
        raise SystemExit(f"{' '.join(command[:3])} failed ({result.returncode}):\n{stderr}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return Cost(wall, cpu), result.stderr.decode(errors="replace")


def median(costs: list[Cost]) -> Cost:
    """Wall and CPU medians, each on its own."""
    return Cost(statistics.median(c.wall for c in costs), statistics.median(c.cpu for c in costs))
