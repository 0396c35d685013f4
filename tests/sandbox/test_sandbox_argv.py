"""The bubblewrap command line of ``--sandbox`` (agents/sandbox), built without running it."""

from __future__ import annotations

from pathlib import Path, PurePosixPath

from ralphctl.agents.base import AgentCommand
from ralphctl.agents.sandbox import Sandbox, bwrap_argv, confine

P = PurePosixPath
HOME = P("/home/ada")
WORK = P("/home/ada/src/app")


def sandbox(**changes: object) -> Sandbox:
    values: dict[str, object] = {
        "bwrap": "/usr/bin/bwrap",
        "env_tool": "/usr/bin/env",
        "home": HOME,
        "workdir": WORK,
    }
    return Sandbox(**(values | changes))  # type: ignore[arg-type]


def options(box: Sandbox, argv: list[str] | None = None) -> list[str]:
    """The bwrap options alone: between ``bwrap`` and ``--``."""
    argv = bwrap_argv(box, ["agent"]) if argv is None else argv
    return argv[argv.index(box.bwrap) + 1 : argv.index("--")]


def mounts(box: Sandbox, argv: list[str] | None = None) -> list[tuple[str, str]]:
    """Each mount as (option, path), in order."""
    args = options(box, argv)
    return [
        (arg, args[i + 1])
        for i, arg in enumerate(args)
        if arg in ("--bind", "--ro-bind", "--tmpfs")
    ]


def test_the_root_is_read_only_and_tmp_and_home_are_empty_and_the_work_dir_writable() -> None:
    assert mounts(sandbox()) == [
        ("--ro-bind", "/"),
        ("--tmpfs", "/tmp"),
        ("--tmpfs", "/home/ada"),
        ("--bind", "/home/ada/src/app"),
    ]
    args = options(sandbox())
    assert args[:7] == ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    assert "--unshare-pid" in args
    assert "--die-with-parent" in args
    assert args[-2:] == ["--chdir", str(WORK)]


def test_binds_name_their_path_twice_and_tmpfs_once() -> None:
    args = options(sandbox())
    bind = args.index("--bind")
    assert args[bind + 1 : bind + 3] == [str(WORK), str(WORK)]
    assert args[args.index("--tmpfs") + 1] == "/tmp"


def test_the_agents_own_paths_are_writable_and_mounted_after_the_home_that_holds_them() -> None:
    box = sandbox(writable=(P("/home/ada/.claude"), P("/home/ada/.claude.json")))
    order = mounts(box)
    assert order.index(("--tmpfs", "/home/ada")) < order.index(("--bind", "/home/ada/.claude"))
    assert ("--bind", "/home/ada/.claude.json") in order


def test_what_the_agent_runs_is_bound_read_only_only_where_it_would_be_hidden() -> None:
    box = sandbox(
        readable=(
            P("/home/ada/.nvm/versions/node/v22/bin"),  # under the home: bound back
            P("/usr/local/bin"),  # visible anyway: left out
            P("/home/ada/src/app/node_modules/.bin"),  # inside the work dir: stays writable
            P("/home/ada"),  # the home itself: never bound back
        )
    )
    assert mounts(box)[3:] == [
        ("--bind", "/home/ada/src/app"),
        ("--ro-bind", "/home/ada/.nvm/versions/node/v22/bin"),
    ]


def test_a_path_is_mounted_once_writable_winning_over_read_only() -> None:
    box = sandbox(writable=(P("/home/ada/.codex"),), readable=(P("/home/ada/.codex"),))
    assert [m for m in mounts(box) if m[1] == "/home/ada/.codex"] == [
        ("--bind", "/home/ada/.codex")
    ]


def test_hidden_places_get_an_empty_tmpfs() -> None:
    box = sandbox(hidden=(P("/run/user/1000"),))
    assert ("--tmpfs", "/run/user/1000") in mounts(box)


def test_a_work_dir_under_tmp_is_bound_after_the_private_tmp() -> None:
    box = sandbox(home=P("/tmp/t/home"), workdir=P("/tmp/t/project"))
    assert mounts(box) == [
        ("--ro-bind", "/"),
        ("--tmpfs", "/tmp"),
        ("--bind", "/tmp/t/project"),
        ("--tmpfs", "/tmp/t/home"),
    ]


def test_the_network_is_the_hosts_unless_it_is_turned_off() -> None:
    assert "--unshare-net" not in options(sandbox())
    assert "--unshare-net" in options(sandbox(network=False))


def test_root_runs_without_capabilities() -> None:
    assert "--cap-drop" not in options(sandbox())
    args = options(sandbox(as_root=True))
    assert args[args.index("--cap-drop") + 1] == "ALL"


def test_agent_sockets_that_reach_the_users_keys_are_unset() -> None:
    args = options(sandbox())
    assert [args[i + 1] for i, a in enumerate(args) if a == "--unsetenv"] == [
        "SSH_AUTH_SOCK",
        "GPG_AGENT_INFO",
    ]


def test_bwrap_ignores_sigint_so_the_agent_alone_answers_it() -> None:
    argv = bwrap_argv(sandbox(), ["claude", "-p"])
    assert argv[:3] == ["/usr/bin/env", "--ignore-signal=INT", "/usr/bin/bwrap"]
    assert argv[argv.index("--") + 1 :] == ["/usr/bin/env", "--default-signal=INT", "claude", "-p"]


def test_confine_keeps_the_command_and_shows_it_its_prompt_file() -> None:
    prompt = Path("/run/user/1000/ralphctl/prompts/l-1-s.md")
    command = AgentCommand(["aider", "--file"], b"the prompt", {"X": "1"}, prompt)
    box = sandbox(hidden=(P("/run/user/1000"),))

    confined = confine(command, box)

    assert (confined.stdin, confined.env, confined.prompt_file) == (
        b"the prompt",
        {"X": "1"},
        prompt,
    )
    assert confined.argv[-2:] == ["aider", "--file"]
    assert ("--ro-bind", str(prompt)) in mounts(box, list(confined.argv))


def test_container_engine_sockets_are_masked_with_dev_null() -> None:
    args = options(sandbox(masked=(P("/run/docker.sock"),)))
    at = args.index("/dev/null")
    assert args[at - 1 : at + 2] == ["--ro-bind", "/dev/null", "/run/docker.sock"]


def test_a_user_without_a_home_has_only_tmp_hidden() -> None:
    assert mounts(sandbox(home=None, workdir=P("/srv/app"))) == [
        ("--ro-bind", "/"),
        ("--tmpfs", "/tmp"),
        ("--bind", "/srv/app"),
    ]


def test_protected_paths_stay_read_only_inside_the_writable_work_dir() -> None:
    git = P("/home/ada/src/app/.git")
    box = sandbox(protected=(git / "config", git / "hooks"))
    assert mounts(box)[3:] == [
        ("--bind", "/home/ada/src/app"),
        ("--ro-bind", "/home/ada/src/app/.git/config"),
        ("--ro-bind", "/home/ada/src/app/.git/hooks"),
    ]
