"""A fresh loop of the command agent: its prompt in a private file per iteration, and the
tokens it prints priced by the loop's model (an estimated cost)."""

from __future__ import annotations

import asyncio
import shlex
import stat
import sys
from pathlib import Path

import pytest

from ralphctl.agents.command import CommandAdapter
from ralphctl.domain.config import LoopConfig
from ralphctl.domain.costs import price_for
from ralphctl.domain.model import TokenUsage
from ralphctl.domain.states import LoopStatus, StopReason
from ralphctl.engine.loops import new_loop
from ralphctl.engine.request import ignored_settings
from ralphctl.engine.runner import LoopRunner
from ralphctl.engine.starting import default_adapter
from ralphctl.store.repository import Store

pytestmark = pytest.mark.timeout(60)

#: The agent: keeps a copy of its prompt file's path and text, prints its usage, and says it
#: is done on its second run.
AGENT = """
import pathlib, sys
path = pathlib.Path(sys.argv[1])
seen = pathlib.Path("seen.txt")
runs = seen.read_text().count("--run--") if seen.exists() else 0
with seen.open("a") as log:
    log.write(f"--run-- {path}\\n{path.read_text()}\\n")
print("Working.")
print("usage: 1000 in, 200 out")
if runs == 1:
    print("<promise>COMPLETE</promise>")
"""
TOKENS = r"usage: (?P<input>\d+) in, (?P<output>\d+) out"


@pytest.fixture
def runtime_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The user's runtime dir, where prompt files go."""
    folder = tmp_path / "run"
    folder.mkdir(mode=0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(folder))
    return folder / "ralphctl" / "prompts"


def command_loop(workdir: Path, **settings: object) -> tuple[LoopConfig, LoopRunner, Store]:
    program = workdir.parent / "agent.py"
    program.write_text(AGENT)
    config = LoopConfig(
        agent="command",
        agent_command=f"{shlex.quote(sys.executable)} {program} {{prompt_file}}",
        agent_tokens_regex=TOKENS,
        model="gpt-5-codex",
        cooldown=0,
        checkpoint_interval=0,
        **settings,  # type: ignore[arg-type]
    )
    store = Store.open(str(workdir.parent / "ralphctl.db"))
    loop = store.create_loop(new_loop("Make it work.", workdir, config, agent="command"))
    return config, LoopRunner(store, default_adapter(config), loop, config), store


def test_each_iteration_reads_its_prompt_from_a_private_file_gone_afterwards(
    workdir: Path, runtime_dir: Path
) -> None:
    _, runner, store = command_loop(workdir)

    final = asyncio.run(runner.run())

    assert final.status is LoopStatus.COMPLETED
    assert final.stop_reason is StopReason.COMPLETION
    runs = (workdir / "seen.txt").read_text().split("--run-- ")[1:]
    paths = [Path(run.splitlines()[0]) for run in runs]
    assert len(set(paths)) == 2  # one file per iteration
    assert all(path.parent == runtime_dir for path in paths)
    assert all(path.name.startswith(f"{final.id}-{n}-") for n, path in enumerate(paths, 1))
    assert "Make it work." in runs[0]
    assert list(runtime_dir.iterdir()) == []
    assert stat.S_IMODE(runtime_dir.parent.stat().st_mode) == 0o700  # the sockets' dir too
    store.close()


def test_tokens_without_a_cost_are_priced_by_the_model_and_marked_estimated(
    workdir: Path, runtime_dir: Path
) -> None:
    _, runner, store = command_loop(workdir)

    final = asyncio.run(runner.run())

    price = price_for("gpt-5-codex")
    assert price is not None
    each = price.cost(TokenUsage(input=1000, output=200))
    iterations = store.iterations(final.id)
    assert [it.cost_source for it in iterations] == ["estimated", "estimated"]
    assert [it.cost_usd for it in iterations] == [pytest.approx(each)] * 2
    assert final.cost_usd == pytest.approx(2 * each)
    assert (final.tokens_input, final.tokens_output) == (2000, 400)
    store.close()


def test_a_loops_price_override_prices_the_command_agents_model(
    workdir: Path, runtime_dir: Path
) -> None:
    costs = {"gpt-5-codex": {"input": 10.0, "output": 100.0}}
    _, runner, store = command_loop(workdir, costs=costs)

    final = asyncio.run(runner.run())

    assert final.cost_usd == pytest.approx(2 * (1000 * 10.0 + 200 * 100.0) / 1_000_000)
    store.close()


def test_the_adapter_is_made_from_the_settings_its_agent_takes() -> None:
    config = LoopConfig(
        agent="command", agent_command="my-agent --fast", model="gpt-5", permission_mode="plan"
    )

    adapter = default_adapter(config)

    assert isinstance(adapter, CommandAdapter)
    assert adapter.argv == ("my-agent", "--fast")
    assert adapter.model == "gpt-5"


@pytest.mark.parametrize(
    ("settings", "named"),
    [
        ({"agent": "claude", "agent_command": "my-agent"}, "agent_command"),
        (
            {"agent": "scripted", "script": "s.json", "agent_cost_regex": "(?P<cost>.+)"},
            "agent_cost",
        ),
        ({"agent": "command", "agent_command": "a", "script": "s.json"}, "script"),
    ],
)
def test_a_setting_of_another_agent_is_refused(settings: dict[str, str], named: str) -> None:
    with pytest.raises(ValueError, match=f"{named}.*not a setting of the {settings['agent']}"):
        default_adapter(LoopConfig(**settings))  # type: ignore[arg-type]


def test_a_permission_mode_the_command_agent_cannot_express_is_named_as_ignored() -> None:
    plan = LoopConfig(agent="command", agent_command="my-agent", permission_mode="plan")
    default = LoopConfig(agent="command", agent_command="my-agent")

    assert ignored_settings(plan, default_adapter(plan)) == [
        "permission_mode plan is ignored: the command agent has no permission modes "
        "(its own arguments decide what it may do)"
    ]
    assert ignored_settings(default, default_adapter(default)) == []
