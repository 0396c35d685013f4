"""``--sandbox``: the bubblewrap command line that confines one agent process. Pure.

What the agent sees (docs/safety.md):

- the whole filesystem read-only (``--ro-bind / /``), a fresh ``/dev`` and ``/proc``;
- a private, empty ``/tmp``, and an empty home directory (``--tmpfs``): the user's secrets
  (``~/.ssh``, ``~/.aws``, ``~/.gnupg``, other repositories) are not there;
- read-write, bound back at their own paths: the work dir (with the loop's ``.ralph``), the
  agent's own config and credential paths (``AgentSpec.sandbox_paths``) and the git dirs of
  a work dir below its repository's top or in a worktree;
- read-only, bound back: what it needs to run from under the home or ``/tmp`` (its CLI,
  the runtime on ``PATH``, the prompt file, git's configuration); read-only inside the work
  dir: its repository's ``.git/config`` and ``.git/hooks``, which would otherwise let the
  agent run commands outside the sandbox the next time ralphctl or the user runs git;
- hidden (an empty tmpfs over them): other places holding live secrets, such as the user's
  runtime dir with its ssh and gpg agent sockets; masked (``/dev/null`` over them): the
  sockets of container engines, which would start a container with any file mounted;
- its own PID namespace, so no process outside it can be seen or signalled; no
  capabilities, even as root; with ``network=False`` a network namespace of its own (only a
  loopback of its own: the host's, local models included, is out of reach).

The runner signals the agent's process group (``agents/process``): SIGINT asks the agent to
end its turn. bubblewrap leads that group and would die of the SIGINT, taking the agent with
it before it could print its result, so it is started with SIGINT ignored and the agent with
it restored (``env --ignore-signal`` / ``--default-signal``, GNU coreutils 8.31+). No
``--new-session``: the agent would leave the group, and the runner starts it without a
controlling terminal anyway, so there is none to inject input into. ``--die-with-parent``:
if the runner dies, so does the sandbox.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import PurePosixPath

from ralphctl.agents.base import AgentCommand

#: Environment variables naming agent sockets that would reach the user's keys.
AGENT_SOCKET_VARS = ("SSH_AUTH_SOCK", "GPG_AGENT_INFO")


@dataclass(frozen=True, slots=True)
class Sandbox:
    """The mounts and namespaces of one confined run; every path absolute and resolved.

    ``bwrap`` and ``env_tool`` are the paths of ``bwrap`` and of GNU ``env``; ``home`` is None
    for a user without a home directory (nothing there to hide). ``protected``: read-only even
    inside a writable path (a repository's ``.git/config`` and ``.git/hooks``).
    """

    bwrap: str
    env_tool: str
    home: PurePosixPath | None
    workdir: PurePosixPath
    writable: tuple[PurePosixPath, ...] = ()
    readable: tuple[PurePosixPath, ...] = ()
    protected: tuple[PurePosixPath, ...] = ()
    hidden: tuple[PurePosixPath, ...] = ()
    masked: tuple[PurePosixPath, ...] = ()
    network: bool = True
    as_root: bool = False


def confine(command: AgentCommand, sandbox: Sandbox) -> AgentCommand:
    """``command`` run inside ``sandbox``: the same stdin, environment and prompt file; the
    prompt file is bound into the sandbox read-only."""
    readable = sandbox.readable
    if command.prompt_file is not None:
        readable += (PurePosixPath(command.prompt_file),)
    return replace(command, argv=bwrap_argv(replace(sandbox, readable=readable), command.argv))


def bwrap_argv(sandbox: Sandbox, argv: Sequence[str]) -> list[str]:
    """The command line running ``argv`` inside ``sandbox``."""
    options = ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    for mount, path in _mounts(sandbox):
        options += [mount, str(path)] if mount == "--tmpfs" else [mount, str(path), str(path)]
    for path in sandbox.masked:
        options += ["--ro-bind", "/dev/null", str(path)]
    options += ["--unshare-pid", "--die-with-parent"]
    if not sandbox.network:
        options.append("--unshare-net")
    if sandbox.as_root:
        options += ["--cap-drop", "ALL"]
    for name in AGENT_SOCKET_VARS:
        options += ["--unsetenv", name]
    options += ["--chdir", str(sandbox.workdir)]
    return [
        sandbox.env_tool,
        "--ignore-signal=INT",
        sandbox.bwrap,
        *options,
        "--",
        sandbox.env_tool,
        "--default-signal=INT",
        *argv,
    ]


def _mounts(sandbox: Sandbox) -> list[tuple[str, PurePosixPath]]:
    """Each mount after the read-only root, parents before what is inside them (a later
    mount covers an earlier one). A path is mounted once, writable before read-only before
    hidden; a read-only bind is left out where it would change nothing (outside every tmpfs)
    or take away a write (inside a writable bind), unless it is ``protected``."""
    home = () if sandbox.home is None else (sandbox.home,)
    hidden = (PurePosixPath("/tmp"), *home, *sandbox.hidden)
    writable = (sandbox.workdir, *sandbox.writable)
    readable = [
        path
        for path in sandbox.readable
        if _inside(path, hidden) and path not in hidden and not _inside(path, writable)
    ]
    chosen: dict[PurePosixPath, str] = {}
    for mount, paths in (
        ("--bind", writable),
        ("--ro-bind", (*sandbox.protected, *readable)),
        ("--tmpfs", hidden),
    ):
        for path in paths:
            chosen.setdefault(path, mount)
    return sorted(((mount, path) for path, mount in chosen.items()), key=lambda m: len(m[1].parts))


def _inside(path: PurePosixPath, roots: tuple[PurePosixPath, ...]) -> bool:
    return any(path.is_relative_to(root) for root in roots)
