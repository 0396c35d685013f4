"""Where hook-mode runners listen, and which of those sockets start-up may remove."""

from __future__ import annotations

import os
import socket
import stat
import subprocess
import tempfile
from pathlib import Path

import pytest

from ralphctl.engine.hookmode import sockets as runner_sockets
from ralphctl.engine.hookmode.sockets import (
    MAX_SOCKET_PATH,
    UnsafeRuntimeDir,
    listening_path,
    remove_stale,
    runtime_dir,
)


@pytest.fixture
def runtime(sockets: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(sockets))
    monkeypatch.setattr(runner_sockets, "short_dir", lambda: sockets / "short")
    return sockets / "ralphctl"


def bound(path: Path, *, listening: bool) -> socket.socket:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.bind(str(path))
    if listening:
        sock.listen()
    return sock


def dead_pid() -> int:
    done = subprocess.Popen(["true"])
    done.wait()
    return done.pid


def test_the_runtime_dir_is_under_xdg_runtime_dir_else_a_per_user_temp_dir(runtime, monkeypatch):
    assert runtime_dir() == runtime
    monkeypatch.delenv("XDG_RUNTIME_DIR")
    assert runtime_dir() == Path(tempfile.gettempdir()) / f"ralphctl-{os.getuid()}"


def test_a_runner_socket_is_named_after_its_process_and_removed_at_the_end(runtime):
    with listening_path("0123456789ab") as path:
        assert path == str(runtime / f"{os.getpid()}-0123456789ab.sock")
        assert stat.S_IMODE(runtime.stat().st_mode) == 0o700
        bound(Path(path), listening=True).close()
    assert list(runtime.iterdir()) == []


def test_a_runtime_dir_too_deep_for_a_socket_path_falls_back_to_a_short_private_dir(
    sockets: Path, monkeypatch: pytest.MonkeyPatch
):
    deep = sockets / ("d" * 60) / ("e" * 60)  # a long $XDG_RUNTIME_DIR (or $TMPDIR)
    deep.mkdir(parents=True)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(deep))

    with listening_path("0123456789ab") as path:
        assert Path(path).parent == Path("/tmp") / f"ralphctl-{os.getuid()}"
        assert len(os.fsencode(path)) <= MAX_SOCKET_PATH
        assert stat.S_IMODE(Path(path).parent.stat().st_mode) == 0o700
        bound(Path(path), listening=True).close()  # binds: the path is short enough
    assert not Path(path).exists()


def test_a_runner_that_died_leaves_no_socket_in_the_short_dir_either(runtime, sockets):
    short = sockets / "short"
    short.mkdir(mode=0o700)
    left = short / f"{dead_pid()}-0123456789ab.sock"
    bound(left, listening=False).close()

    assert remove_stale() == [left]


def test_a_loose_runtime_dir_is_made_private(runtime):
    runtime.mkdir(mode=0o755)
    runtime.chmod(0o755)
    with listening_path("0123456789ab"):
        assert stat.S_IMODE(runtime.stat().st_mode) == 0o700


@pytest.mark.skipif(os.geteuid() != 0, reason="giving the dir to another user needs root")
def test_a_runtime_dir_of_another_user_is_refused_and_left_alone(runtime):
    runtime.mkdir(mode=0o700)
    stale = runtime / f"{dead_pid()}-0123456789ab.sock"
    bound(stale, listening=False).close()
    os.chown(runtime, 65534, 65534)
    with pytest.raises(UnsafeRuntimeDir), listening_path("0123456789ab"):
        pass
    assert remove_stale() == []
    assert stale.exists()


def test_only_sockets_whose_process_is_gone_and_that_nobody_answers_are_removed(runtime):
    runtime.mkdir(mode=0o700)
    gone = dead_pid()
    stale = runtime / f"{gone}-aaaaaaaaaaaa.sock"
    ours = runtime / f"{os.getpid()}-bbbbbbbbbbbb.sock"  # an earlier process with this pid
    answering = runtime / f"{gone}-cccccccccccc.sock"  # the pid is reused elsewhere
    alive = subprocess.Popen(["sleep", "60"])
    living = runtime / f"{alive.pid}-dddddddddddd.sock"
    other = runtime / "notes.txt"
    other.write_text("not a socket of ours")
    listener = bound(answering, listening=True)
    for path in (stale, ours, living):
        bound(path, listening=False).close()
    try:
        removed = remove_stale()
    finally:
        alive.kill()
        alive.wait()
        listener.close()
    assert sorted(removed) == sorted([stale, ours])
    assert sorted(p.name for p in runtime.iterdir()) == sorted(
        [answering.name, living.name, other.name]
    )


def test_without_a_runtime_dir_there_is_nothing_to_remove(runtime):
    assert remove_stale() == []
