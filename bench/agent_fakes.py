"""The benchmarks' stand-in agent CLIs (bench/fake_agents/<agent>.py), found through the registry.

Each fake is a standard-library script printing its agent's stream format; it is installed as
an executable run by this interpreter without site packages (``-IS``: it starts as fast as
Python can) that also appends a line to ``bench-progress.md``, and ralphctl finds it through
the agent's ``RALPHCTL_<AGENT>_BIN``. The bare loop
the benchmarks compare with runs the very command the adapter builds, without ralphctl.
"""

from __future__ import annotations

import os
import shlex
import sys
import uuid
from pathlib import Path

from ralphctl.agents.base import AgentRequest
from ralphctl.agents.registry import all_specs
from ralphctl.agents.spec import AgentSpec

FAKES = Path(__file__).with_name("fake_agents")


def fake_source(spec: AgentSpec) -> Path | None:
    """The agent's fake, if it has one."""
    source = FAKES / f"{spec.name}.py"
    return source if source.is_file() else None


def benchable() -> tuple[list[AgentSpec], list[str]]:
    """The agents with an external CLI and a fake, and why each other one is left out."""
    found, skipped = [], []
    for spec in all_specs():
        if spec.bin_env is None:
            skipped.append(f"{spec.name}: not an external CLI (no RALPHCTL_<AGENT>_BIN)")
        elif fake_source(spec) is None:
            skipped.append(f"{spec.name}: no fake yet ({FAKES.name}/{spec.name}.py)")
        else:
            found.append(spec)
    return found, skipped


#: The installed executable: one edit in the work dir per run whatever the fake does (so the
#: loop progresses as a working agent's does and the no-progress guard never ends it), then
#: the fake itself. At its end it appends the CPU time of its whole process (start-up
#: included) and the moment it started to the log, so that a benchmark can tell the agent's
#: CPU from ralphctl's and time each iteration from one agent's start to the next, and exits at
#: once: the interpreter's clean-up (~5 ms of CPU) would come after the figure.
_LAUNCHER = """#!{python} -IS
import os, resource, runpy, sys, time
started = time.time()
with open("bench-progress.md", "a") as progress:
    progress.write("run " + os.environ.get("RALPHCTL_ITERATION", "?") + "\\n")
sys.argv[0] = {source!r}
try:
    runpy.run_path({source!r}, run_name="__main__")
    status = 0
except SystemExit as stop:
    status = stop.code if isinstance(stop.code, int) else 0 if stop.code is None else 1
sys.stdout.flush()
sys.stderr.flush()
usage = resource.getrusage(resource.RUSAGE_SELF)
with open({cpu_log!r}, "a") as log:
    log.write(str(usage.ru_utime + usage.ru_stime) + " " + str(started) + "\\n")
os._exit(status)
"""


def install_fake(spec: AgentSpec, directory: Path) -> Path:
    """The agent's fake as an executable in ``directory``, named as its CLI; it logs its CPU
    time to ``cpu_log(directory)``."""
    source = fake_source(spec)
    if source is None:
        raise SystemExit(f"no fake for {spec.name}: write {FAKES / (spec.name + '.py')}")
    target = directory / (spec.executable or spec.name)
    launcher = _LAUNCHER.format(
        python=sys.executable, source=str(source), cpu_log=str(cpu_log(directory))
    )
    target.write_text(launcher)
    target.chmod(0o755)
    return target


def cpu_log(directory: Path) -> Path:
    """Where the fakes installed in ``directory`` log their CPU time (s) and start (epoch s),
    one line a run."""
    return directory / "agent-cpu.log"


def agent_runs(directory: Path) -> list[tuple[float, float]]:
    """The CPU time and start time of each run the fakes installed in ``directory`` logged
    since the last call, in order."""
    log = cpu_log(directory)
    try:
        lines = log.read_text().splitlines()
    except FileNotFoundError:
        return []
    log.unlink()
    runs = [line.split() for line in lines]
    return [(float(cpu), float(started)) for cpu, started in runs]


def bare_command(spec: AgentSpec, fake: Path, workdir: Path, prompt: Path) -> str:
    """A shell command running the agent as its adapter would (same argv, stdin or prompt
    file, environment), with the prompt in file ``prompt``; stdout discarded."""
    assert spec.bin_env is not None
    saved = os.environ.get(spec.bin_env)
    os.environ[spec.bin_env] = str(fake)
    try:
        request = AgentRequest(
            prompt=prompt.read_text(),
            workdir=workdir,
            iteration=1,
            session_id=str(uuid.uuid4()),
            prompt_path=prompt.with_name("prompt-file.md"),
        )
        command = spec.make({}).build_command(request)
    finally:
        if saved is None:
            del os.environ[spec.bin_env]
        else:
            os.environ[spec.bin_env] = saved
    env = " ".join(  # the loop sets the iteration, as ralphctl does
        shlex.quote(f"{key}={value}")
        for key, value in command.env.items()
        if key != "RALPHCTL_ITERATION"
    )
    argv = " ".join(shlex.quote(arg) for arg in command.argv)
    run = f"env {env} {argv}" if env else argv
    if command.prompt_file is not None:
        copy = f"cp {shlex.quote(str(prompt))} {shlex.quote(str(command.prompt_file))}"
        return f"{copy} && {run} < /dev/null > /dev/null"
    return f"{run} < {shlex.quote(str(prompt))} > /dev/null"
