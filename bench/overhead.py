"""What `ralphctl run` adds to the agent's own time, on the path a user takes.

The user's path: an agent adapter (claude unless ``--agent`` names another), default settings,
a git repository. The agent is a fake CLI (bench/fake_agents/<agent>.py: standard library only,
one edit per run, the stream of a one-turn session in its agent's format) selected with the
agent's RALPHCTL_<AGENT>_BIN. No user or project configuration file is read, and the database
is the default one (SQLite in the user data directory, a scratch XDG_DATA_HOME). The baseline,
measured in the same run, is a bare shell loop running the same fake agent with the command
the adapter builds (bench/agent_fakes.py):

    shell loop : for i in 1..N: <the adapter's argv> < prompt > /dev/null [; sleep 5]
    ralphctl   : ralphctl run --task ... --max-iterations N [--cooldown 0] --workdir ...

- per-iteration overhead with the default cooldown (5 s from one agent's exit to the next one's
  start; ralphctl records the iteration, looks at the files and makes its checkpoints within
  it): over one block of iterations (one checkpoint), the mean period between ralphctl's agents'
  starts less that of the shell loop running ``sleep 5`` between its runs (less what starting
  ``sleep`` costs, ``sleep 0`` measured in the same run), both from the second agent's start
  on (the first period also holds what a run does once while its first agent runs: the store
  opened, the parser and the terminal output imported; the fixed cost counts it); the median
  of the rounds, which alternate which loop runs first. 60 s a round;
- the same with ``--cooldown 0``, where all of ralphctl's work between two agents holds the next
  one back: the slope of ralphctl's time between a short run and a long one
  (both multiples of the default checkpoint interval, so checkpoint commits count at their
  real rate), minus the slope of the shell loop's; fixed costs cancel out. The rounds are
  paired and interleaved (each runs both loops, short then long, and which loop goes first
  alternates from round to round), so load on the machine hits both loops alike; the figure
  is the median of the rounds' differences;
- the same overhead by the agents' start times: in the long runs, the time from one agent's
  start to the next, averaged over blocks of iterations as long as the checkpoint interval (so
  each holds one checkpoint), the first block left out; the median block of ralphctl's runs
  less the median block of the shell loop's, over every round. Medians of many blocks are not
  moved by a burst of load on a shared machine, where a slope (a mean over whole runs) is;
- ralphctl's own CPU per iteration: the same slope of ralphctl's CPU time less the CPU time
  its agents used (each fake logs its own, start-up included: bench/agent_fakes.py), so what
  is left is ralphctl's process and the git commands it ran, whatever the load;
- on repositories of growing size, against one ``git status`` of the same repository (on
  20,000 files also with checkpoints off, to show what the checkpoint commits add);
  repositories are built once and cached under the temp dir (bench/git_repos.py);
- start-up to the first spawn: from launching ``ralphctl run`` to the moment the runner
  spawned the first agent (the iteration's ``agent_started_at``);
- fixed cost of a run: the wall time of a one-iteration run minus one agent run;
- variants on the small repository: the same fake agent in a directory that is not a git
  repository, and the old benchmark's setting (the scripted agent, no git, no-progress off).

Every figure is printed as wall-clock and CPU time (user + system of ralphctl and everything it
ran): on a busy machine the wall clock also counts waiting for a CPU, the CPU time does not.
Per-iteration figures also print ralphctl's own CPU ("own CPU"; "-" for the scripted agent,
which logs none; with the default cooldown only the wall clock is measured). Budgets (on the
wall clock; printed next to the figures, never asserted): <= 10 ms per iteration on a small
repository; <= one ``git status`` + 10 ms per iteration on 20,000 files (both with the default
cooldown and with ``--cooldown 0``); <= 300 ms start-up to the first spawn; <= 500 ms fixed cost
of a run.

    .venv/bin/python bench/overhead.py [--rounds R] [--sizes 1000,10000,20000] [--big]
    .venv/bin/python bench/overhead.py --agent codex      (small repository, one adapter)
    .venv/bin/python bench/overhead.py --all-agents       (every adapter with a fake)
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from agent_fakes import agent_runs, bare_command, benchable, install_fake
from git_repos import IDENTITY, cached_repository, git_status, make_repository
from ralphctl.agents.registry import spec_for
from ralphctl.agents.spec import AgentSpec
from ralphctl.domain.defaults import CHECKPOINT_INTERVAL, COOLDOWN_S
from timing import Cost, median, timed

BIN = Path(sys.executable).parent
SMALL_REPOSITORY = 50
DEFAULT_SIZES = "1000,10000,20000"
BIG_SIZES = "100000"
BIG = 20_000
ONE_ITERATION_RUNS = 5
#: A run whose agents' start-to-start periods make one block holding one checkpoint.
PACED_ITERATIONS = CHECKPOINT_INTERVAL + 2  # the first period left out
NO_COOLDOWN = "with --cooldown 0 (all of ralphctl's work between two agents is then in their way):"
SCRIPTED = {"steps": [{"text": "nothing to do", "cost_usd": 0.0001, "tokens": {"input": 1}}]}


@dataclass(frozen=True)
class Agent:
    """How both loops run the agent: ralphctl's flags and the shell loop's command; whether
    the agent logs its CPU time (the installed fakes do)."""

    run_flags: tuple[str, ...]
    shell_command: str
    logs_cpu: bool = True


@dataclass(frozen=True)
class Run:
    """One loop's cost (s), the CPU time (s) its agents logged and when each started (s)."""

    cost: Cost
    agents_cpu: float
    starts: list[float]

    def own_cpu(self) -> float:
        return self.cost.cpu - self.agents_cpu

    def period(self) -> float:
        """The mean time (ms) from one agent's start to the next, from the second agent's on."""
        return (self.starts[-1] - self.starts[1]) / (len(self.starts) - 2) * 1000

    def blocks(self) -> list[float]:
        """Iteration times (ms) from one agent's start to the next, averaged over blocks of
        ``CHECKPOINT_INTERVAL`` iterations (each holds one checkpoint), the first left out."""
        starts, size = self.starts, CHECKPOINT_INTERVAL
        return [
            (starts[i + size] - starts[i]) / size * 1000
            for i in range(size, len(starts) - size, size)
        ]


def _run(cost: Cost, directory: Path) -> Run:
    runs = agent_runs(directory)
    return Run(cost, sum(cpu for cpu, _ in runs), [started for _, started in runs])


@dataclass(frozen=True)
class Overhead:
    agent: Cost  # the shell loop's time per iteration (ms): the agent itself
    added: Cost  # what ralphctl adds per iteration (ms)
    own_cpu: float | None  # ralphctl's CPU per iteration (ms), its agents' left out
    by_blocks: float | None  # the same from the agents' starts: median block difference (ms)
    rounds: tuple[float, float]  # the lowest and highest round's ``added`` (wall, ms)


class Bench:
    """Runs both loops in one scratch directory with a clean environment and one database,
    where a user's is (under the user data directory)."""

    def __init__(self, root: Path, spec: AgentSpec) -> None:
        self.root = root
        self.spec = spec
        self.fake = install_fake(spec, root)
        self.prompt = root / "prompt.txt"
        self.prompt.write_text("benchmark\n")
        self.env = _clean_environment(root, spec, self.fake)
        self.db = root / "data" / "ralphctl" / "ralphctl.db"

    def agent(self, workdir: Path, *flags: str) -> Agent:
        """The fake agent in ``workdir``; ``flags`` for ``ralphctl run`` (none: the defaults;
        the agent is named unless it is the default one)."""
        named = () if self.spec.name == "claude" else ("--agent", self.spec.name)
        command = bare_command(self.spec, self.fake, workdir, self.prompt)
        return Agent((*named, *flags), command)

    def scripted_agent(self) -> Agent:
        script = self.root / "script.json"
        script.write_text(json.dumps(SCRIPTED))
        command = f"{sys.executable} -m ralphctl.agents.scripted_agent {script} < /dev/null"
        return Agent(("--agent", "scripted", "--script", str(script)), command, logs_cpu=False)

    def overhead(self, workdir: Path, agent: Agent, short: int, long: int, rounds: int) -> Overhead:
        """Medians over ``rounds`` paired rounds of the agent's cost, ralphctl's overhead and
        ralphctl's own CPU, per iteration (slopes between ``short`` and ``long`` runs)."""
        agents, added, own = [], [], []
        ours_blocks: list[float] = []
        shell_blocks: list[float] = []
        for round_ in range(rounds):
            shell: dict[int, Run] = {}
            ours: dict[int, Run] = {}
            for n in (short, long):  # which loop goes first alternates between rounds
                if round_ % 2:
                    ours[n] = self.ralphctl(workdir, agent, n)
                    shell[n] = self.shell_loop(workdir, agent, n)
                else:
                    shell[n] = self.shell_loop(workdir, agent, n)
                    ours[n] = self.ralphctl(workdir, agent, n)
            span = long - short
            shell_slope = (shell[long].cost - shell[short].cost) / span
            agents.append(shell_slope.ms())
            added.append(((ours[long].cost - ours[short].cost) / span - shell_slope).ms())
            own.append((ours[long].own_cpu() - ours[short].own_cpu()) / span * 1000)
            ours_blocks += ours[long].blocks()
            shell_blocks += shell[long].blocks()
        own_cpu = statistics.median(own) if agent.logs_cpu else None
        by_blocks = None
        if agent.logs_cpu and ours_blocks and shell_blocks:
            by_blocks = statistics.median(ours_blocks) - statistics.median(shell_blocks)
        walls = [cost.wall for cost in added]
        return Overhead(median(agents), median(added), own_cpu, by_blocks, (min(walls), max(walls)))

    def shell_loop(self, workdir: Path, agent: Agent, iterations: int, pause: float = 0) -> Run:
        """The agent run ``iterations`` times by ``sh``, with ``sleep pause`` between runs."""
        wait = f"if [ $i -lt {iterations} ]; then sleep {pause:g}; fi; " if pause else ""
        loop = (
            f"for i in $(seq 1 {iterations}); do "
            f"RALPHCTL_ITERATION=$i; export RALPHCTL_ITERATION; {agent.shell_command} || exit 1; "
            f"{wait}done"
        )
        cost = timed(["sh", "-c", loop], workdir, self.env)[0]
        return _run(cost, self.root)

    def paced(self, workdir: Path, agent: Agent, rounds: int) -> float:
        """What ralphctl adds per iteration with the default cooldown (ms): over one block of
        iterations after the first, the mean period of its agents' starts less that of the shell
        loop pausing as long between its runs (with ``sleep``, whose own start is taken off);
        the median of ``rounds`` rounds, which alternate which loop runs first."""
        sleep_start = self.sleep_start()
        added = []
        for round_ in range(rounds):
            if round_ % 2:
                ours = self.ralphctl(workdir, agent, PACED_ITERATIONS, cooldown=None)
                shell = self.shell_loop(workdir, agent, PACED_ITERATIONS, pause=COOLDOWN_S)
            else:
                shell = self.shell_loop(workdir, agent, PACED_ITERATIONS, pause=COOLDOWN_S)
                ours = self.ralphctl(workdir, agent, PACED_ITERATIONS, cooldown=None)
            added.append(ours.period() - (shell.period() - sleep_start))
        return statistics.median(added)

    def sleep_start(self) -> float:
        """What running ``sleep`` costs the shell loop beyond its pause (ms): ``sleep 0``."""
        runs = 20
        loop = f"for i in $(seq 1 {runs}); do sleep 0; done"
        return timed(["sh", "-c", loop], self.root, self.env)[0].wall / runs * 1000

    def ralphctl(
        self, workdir: Path, agent: Agent, iterations: int, *, cooldown: str | None = "0"
    ) -> Run:
        """The cost of one ``ralphctl run`` that ends on its iteration budget; ``cooldown``
        None: the default one."""
        paused = () if cooldown is None else ("--cooldown", cooldown)
        command = [
            str(BIN / "ralphctl"),
            "run",
            "--task",
            "benchmark",
            *agent.run_flags,
            "--max-iterations",
            str(iterations),
            *paused,
            "--workdir",
            str(workdir),
        ]
        cost, stderr = timed(command, workdir, self.env, expect=1)  # 1: a limit ended it
        run = _run(cost, self.root)
        with sqlite3.connect(self.db) as conn:
            ran, reason = conn.execute(
                "SELECT iteration, stop_reason FROM loops ORDER BY created_at DESC LIMIT 1"
            ).fetchone()
        if (ran, reason) != (iterations, "max_iterations"):
            raise SystemExit(
                f"ralphctl run: {ran} of {iterations} iterations, ended by {reason}:\n{stderr}"
            )
        return run

    def one_iteration(self, workdir: Path, agent: Agent) -> tuple[float, Cost]:
        """A one-iteration run: from its launch to its agent's spawn (ms), and its cost."""
        launched = time.time()
        cost = self.ralphctl(workdir, agent, 1).cost
        with sqlite3.connect(self.db) as conn:
            (spawned,) = conn.execute(
                "SELECT i.agent_started_at FROM iterations i JOIN loops l ON l.id = i.loop_id"
                " WHERE i.n = 1 ORDER BY l.created_at DESC LIMIT 1"
            ).fetchone()
        spawned_at = datetime.fromisoformat(spawned).replace(tzinfo=UTC)  # SQLite: naive UTC
        return (spawned_at.timestamp() - launched) * 1000, cost.ms()


def _clean_environment(root: Path, spec: AgentSpec, fake: Path) -> dict[str, str]:
    """No user or project settings and no RALPHCTL_* overrides but the fake agent's path.
    Python caches bytecode, as an installed ralphctl has it: with PYTHONDONTWRITEBYTECODE set
    (as on some CI hosts), every run would compile again each module edited since its cache
    was written, 40 ms of start-up for a few large ones."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("RALPHCTL_") and k != "PYTHONDONTWRITEBYTECODE"
    }
    env.update(IDENTITY)
    env["XDG_CONFIG_HOME"] = str(root / "config")
    env["XDG_DATA_HOME"] = str(root / "data")
    assert spec.bin_env is not None
    env[spec.bin_env] = str(fake)
    return env


def report_small(bench: Bench, rounds: int, paced_rounds: int) -> None:
    workdir = make_repository(bench.root / "small", SMALL_REPOSITORY)
    agent = bench.agent(workdir)
    bench.ralphctl(workdir, agent, 1)  # creates the database, as a user's first run did
    per = bench.overhead(workdir, agent, short=10, long=40, rounds=rounds)
    paced = bench.paced(workdir, agent, paced_rounds)
    runs = [bench.one_iteration(workdir, agent) for _ in range(ONE_ITERATION_RUNS)]
    startup = statistics.median(spawn for spawn, _ in runs)
    fixed = median([cost - per.agent for _, cost in runs])
    name = bench.spec.name
    print(f"small git repository ({SMALL_REPOSITORY} files), {name} adapter, defaults")
    _header()
    _row("agent run (shell loop), per iteration", per.agent)
    _paced_row(paced, _verdict(paced, 10))
    print(f"  {NO_COOLDOWN}")
    _row("ralphctl overhead, per iteration", per.added, _verdict(per.added.wall, 10), per.own_cpu)
    low, high = per.rounds  # near its budget, a figure can land on either side from run to run
    print(f"  {'  rounds, lowest and highest':<40} {low:9.1f} {high:9.1f}")
    if per.by_blocks is not None:
        label = f"  same, by agent starts ({CHECKPOINT_INTERVAL}-iteration blocks)"
        print(f"{label:<42} {per.by_blocks:9.1f} {'':>19}   {_verdict(per.by_blocks, 10)}")
    ratio = (per.agent.wall + per.added.wall) / per.agent.wall if per.agent.wall else 0.0
    print(f"  {'ralphctl / shell loop, per iteration':<40} {ratio:8.2f}x")
    print(f"  {'start-up to first spawn':<40} {startup:9.1f} {'':>19}   {_verdict(startup, 300)}")
    _row("fixed cost of a run (N=1 wall - agent)", fixed, _verdict(fixed.wall, 500))


def report_variants(bench: Bench, rounds: int) -> None:
    plain = bench.root / "not-git"
    plain.mkdir()
    agent = bench.overhead(plain, bench.agent(plain), short=10, long=40, rounds=rounds)
    small = bench.root / "small"
    off = bench.agent(small, "--checkpoint-interval", "0")
    no_checkpoints = bench.overhead(small, off, short=10, long=40, rounds=rounds)
    old = bench.root / "old-benchmark"
    old.mkdir()
    (old / "ralphctl.toml").write_text("[loops.defaults]\nno_progress_threshold = false\n")
    scripted = bench.overhead(old, bench.scripted_agent(), short=10, long=40, rounds=rounds)
    print("variants: ralphctl overhead per iteration (--cooldown 0)")
    _header()
    name = bench.spec.name
    _row(f"{name} adapter, checkpoints off", no_checkpoints.added, own=no_checkpoints.own_cpu)
    _row(f"{name} adapter, not a git directory", agent.added, own=agent.own_cpu)
    _row("scripted, no git, no-progress off (old)", scripted.added, own=scripted.own_cpu)


def report_sizes(bench: Bench, sizes: list[int], rounds: int) -> None:
    name = bench.spec.name
    print(f"ralphctl overhead per iteration by repository size ({name}, defaults, --cooldown 0)")
    print(
        f"  {'files':>8} {'git status':>21} {'overhead':>21} {'own CPU':>9}"
        f" {'overhead - status':>18}   budget (wall)"
    )
    for files in sizes:
        workdir = cached_repository(files)
        status_before = git_status(workdir)
        long = 15 if files > BIG else 25
        agent = bench.agent(workdir)
        per = bench.overhead(workdir, agent, short=5, long=long, rounds=rounds)
        status = median([status_before, git_status(workdir)])
        over = per.added.wall - status.wall
        budget = ""
        if files == BIG:
            low, high = (wall - status.wall for wall in per.rounds)
            budget = f"{_verdict(over, 10, 'git status + ')} (rounds {low:.1f} to {high:.1f})"
        line = f"{_pair(status)} {_pair(per.added)} {_own(per.own_cpu)} {over:15.1f} ms"
        print(f"  {files:>8} {line}   {budget}")
        if files == BIG:  # the default cooldown, and what the checkpoints add without one
            paced = bench.paced(workdir, agent, rounds)
            verdict = _verdict(paced - status.wall, 10, "git status + ")
            label = f"{COOLDOWN_S:g} s cooldown:"
            print(f"  {'':>8} {label:>21} {paced:7.1f} ms {'':>34}   {verdict}")
            off = bench.agent(workdir, "--checkpoint-interval", "0")
            alone = bench.overhead(workdir, off, short=5, long=long, rounds=rounds)
            over = alone.added.wall - status.wall
            line = f"{_pair(alone.added)} {_own(alone.own_cpu)} {over:15.1f} ms"
            print(f"  {'':>8} {'checkpoints off:':>21} {line}")


def _paced_row(added: float, budget: str) -> None:
    """The overhead with the default cooldown: wall clock only (from the agents' starts)."""
    label = f"ralphctl overhead ({COOLDOWN_S:g} s cooldown)"
    print(f"  {label:<40} {added:9.1f} {'':>19}   {budget}")


def _verdict(value: float, budget: float, what: str = "") -> str:
    return f"<= {what}{budget:.0f} ms: {'ok' if value <= budget else 'OVER'}"


def _header() -> None:
    print(f"  {'':<40} {'wall ms':>9} {'CPU ms':>9} {'own CPU':>9}   budget (wall)")


def _row(label: str, cost: Cost, budget: str = "", own: float | None = None) -> None:
    """A figure: its wall and CPU time, and ralphctl's own CPU time when measured."""
    print(f"  {label:<40} {cost.wall:9.1f} {cost.cpu:9.1f} {_own(own)}   {budget}")


def _own(cpu: float | None) -> str:
    return f"{'-':>9}" if cpu is None else f"{cpu:9.1f}"


def _pair(cost: Cost) -> str:
    return f"{cost.wall:7.1f} ms {cost.cpu:6.1f} CPU"


def run_bench(spec: AgentSpec, rounds: int, sizes: list[int] | None, paced_rounds: int) -> None:
    """One agent's figures; ``sizes`` (claude's full report) adds the variants and sizes."""
    with tempfile.TemporaryDirectory(prefix="ralphctl-bench-") as tmp:
        bench = Bench(Path(tmp), spec)
        report_small(bench, rounds, paced_rounds)
        if sizes is not None:
            report_variants(bench, rounds)
            report_sizes(bench, sizes, max(1, rounds - 1))


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3, help="rounds per figure (median)")
    parser.add_argument("--sizes", default=DEFAULT_SIZES, help="repository sizes, in files")
    parser.add_argument("--big", action="store_true", help=f"also {BIG_SIZES} files (slow)")
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--agent", help="one adapter on the small repository (default: claude)")
    which.add_argument("--all-agents", action="store_true", help="every adapter with a fake")
    args = parser.parse_args()
    sizes = [int(size) for size in args.sizes.split(",") if size]
    if args.big:
        sizes += [int(size) for size in BIG_SIZES.split(",")]
    print(f"ralphctl run against a shell loop of the same fake agent; {args.rounds} rounds")
    if args.all_agents:
        found, skipped = benchable()
        for reason in skipped:
            print(f"skipped {reason}")
        for spec in found:
            run_bench(spec, args.rounds, None, 1)  # 60 s a round with the cooldown
    elif args.agent and args.agent != "claude":
        run_bench(spec_for(args.agent), args.rounds, None, args.rounds)
    else:
        run_bench(spec_for("claude"), args.rounds, sizes, args.rounds)


if __name__ == "__main__":
    main()
