"""The hook under fuzzed stdin, trackers, official plugin state and special files: it never
raises, never hangs (each case runs under a deadline), fails open on nonsense and blocks only
for a loop that is really active. Bounded to a few seconds; the counts are printed."""

from __future__ import annotations

import json
import os
import signal
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TypeGuard

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ralphctl.hook.arming import arm
from ralphctl.hook.frontmatter import FrontmatterError, Scalar, parse
from ralphctl.hook.handler import respond
from ralphctl.hook.paths import LEGACY_STATE, lock_for
from tests.hook.helpers import OTHER_SESSION, SESSION, hook_env, stop_event
from tests.reliability.figures import Figure
from tests.reliability.scale import scaled

pytestmark = pytest.mark.reliability

#: Per case: far longer than any answer, far shorter than a hang.
CASE_DEADLINE_S = 5.0
fuzz = settings(
    max_examples=scaled(120, 1000), deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
TRIED: Counter[str] = Counter()
SLOWEST_S = [0.0]  # the slowest answer of any case

TRACKER = (
    b"---\nactive: true\niteration: 1\nmax_iterations: 3\n"
    b'completion_marker: "<promise>X</promise>"\nstarted_at: "2026-01-01T00:00:00Z"\n'
    b"---\nbody\n"
)
LEGACY = (
    b"---\nactive: true\niteration: 1\nsession_id: \nmax_iterations: 3\n"
    b'completion_promise: "DONE"\nstarted_at: "2026-01-01T00:00:00Z"\n---\n\nFix the bug\n'
)
JUNK = st.binary(max_size=20) | st.sampled_from(
    [b"\n---\n", b": [", b'"', b"\\u12", b"\x00", b"\xff\xfe", b"active: true\n", b"-1"]
)


def mutated(seed: bytes) -> st.SearchStrategy[bytes]:
    """``seed`` cut somewhere, junk spliced in, or replaced by random bytes."""
    spliced = st.builds(
        lambda cut, junk, rest: seed[:cut] + junk + seed[cut + rest :],
        st.integers(0, len(seed)),
        JUNK,
        st.integers(0, 8),
    )
    return st.binary(max_size=300) | spliced


stdin_bytes = mutated(stop_event()) | mutated(stop_event(text="<promise>X</promise>"))


@contextmanager
def deadline(seconds: float = CASE_DEADLINE_S) -> Iterator[list[bool]]:
    """Interrupt a case that takes longer than ``seconds`` (the hook catches everything, so
    the flag, not the exception, tells the test)."""
    expired: list[bool] = []

    def interrupt(signum: int, frame: object) -> None:
        expired.append(True)
        raise TimeoutError("the case hung")

    previous = signal.signal(signal.SIGALRM, interrupt)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield expired
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def answer_of(call: Callable[[], tuple[str | None, object]]) -> dict[str, object] | None:
    """The decision ``call`` printed: None, or one JSON object (checked)."""
    began = time.monotonic()
    with deadline() as expired:
        line, _ = call()
    SLOWEST_S[0] = max(SLOWEST_S[0], time.monotonic() - began)
    assert not expired, "the hook hung"
    if line is None:
        return None
    assert "\n" not in line
    printed = json.loads(line)
    assert isinstance(printed, dict)
    return printed


def blocked(printed: dict[str, object] | None) -> bool:
    return printed is not None and printed.get("decision") == "block"


def fields(data: bytes) -> dict[str, Scalar] | None:
    try:
        return parse(data.decode("utf-8"))[0]
    except (UnicodeDecodeError, FrontmatterError):
        try:
            return parse(data.decode("utf-8"), verbatim_quotes=True)[0]
        except (UnicodeDecodeError, FrontmatterError):
            return None


def a_count(value: Scalar) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


@contextmanager
def project_dir() -> Iterator[Path]:
    with tempfile.TemporaryDirectory() as root:
        yield Path(root)


def stop(project: Path, raw: bytes, session: str | None = SESSION) -> dict[str, object] | None:
    return answer_of(lambda: respond(raw, [], hook_env(project, session), time.time()))


@fuzz
@given(raw=stdin_bytes)
def test_fuzzed_stdin_is_answered_and_blocks_only_a_stop_event(raw):
    TRIED["stdin"] += 1
    with project_dir() as project:
        arm(str(project), "Fix it", session_id=SESSION, max_iterations=3)
        printed = stop(project, raw)
    if blocked(printed):
        event = json.loads(raw)
        assert isinstance(event, dict)
        assert event.get("hook_event_name", "Stop") in ("Stop", "AfterAgent")


@fuzz
@given(content=mutated(TRACKER), text=st.sampled_from(["working", "<promise>X</promise>"]))
def test_fuzzed_trackers_block_only_an_active_loop_below_its_bound(content, text):
    TRIED["tracker"] += 1
    with project_dir() as project:
        tracker = Path(arm(str(project), "Fix it", session_id=SESSION).path)
        tracker.write_bytes(content)
        printed = stop(project, stop_event(text=text))
        after = fields(tracker.read_bytes())
    if blocked(printed):
        before = fields(content)
        assert before is not None
        assert before.get("active") is True
        count, bound = before.get("iteration"), before.get("max_iterations")
        assert a_count(count)
        assert a_count(bound)
        assert count < bound
        # A mutated marker is another marker: the seed's promise then does not complete.
        assert text == "working" or before.get("completion_marker") != "<promise>X</promise>"
        assert after is not None
        assert after["iteration"] == count + 1


@fuzz
@given(content=mutated(LEGACY), text=st.sampled_from(["working", "<promise>DONE</promise>"]))
def test_fuzzed_official_plugin_state_blocks_only_a_live_loop(content, text):
    TRIED["legacy"] += 1
    with project_dir() as project:
        state = project / LEGACY_STATE
        state.parent.mkdir()
        state.write_bytes(content)
        printed = stop(project, stop_event(session=OTHER_SESSION, text=text), session=None)
    if blocked(printed):
        before = fields(content)
        assert before is not None
        assert before.get("active") is not False
        count, bound = before.get("iteration"), before.get("max_iterations")
        assert a_count(count)
        assert a_count(bound)
        assert bound == 0 or count < bound
        assert text == "working"


SPECIAL_KINDS = ("fifo", "directory", "device", "dangling link", "link loop")
#: Where a special file may sit, and whether the loop may still block with it there.
POSITIONS = {
    "tracker": False,
    "tracker lock": False,
    "pending tracker": False,
    "official plugin state": False,
    "transcript": True,
    "hook log": True,
}


def make_special(path: Path, kind: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.is_symlink() or path.is_file():
        path.unlink()
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "directory":
        path.mkdir()
    elif kind == "device":
        path.symlink_to("/dev/zero")
    elif kind == "dangling link":
        path.symlink_to(path.parent / "nowhere")
    else:
        path.symlink_to(path)


@settings(max_examples=scaled(60, 300), deadline=None)
@given(position=st.sampled_from(sorted(POSITIONS)), kind=st.sampled_from(SPECIAL_KINDS))
def test_special_files_anywhere_never_hang_the_hook(position, kind):
    TRIED[f"special: {position}"] += 1
    with project_dir() as project:
        session = None if position in ("pending tracker", "official plugin state") else SESSION
        if session is not None:
            tracker = Path(arm(str(project), "Fix it", session_id=SESSION).path)
        transcript = project / "transcript.jsonl"
        target = {
            "tracker": lambda: tracker,
            "tracker lock": lambda: Path(lock_for(str(tracker))),
            "pending tracker": lambda: project / ".ralph" / "pending" / "0123abcd.md",
            "official plugin state": lambda: project / LEGACY_STATE,
            "transcript": lambda: transcript,
            "hook log": lambda: project / ".ralph" / "hook.log",
        }[position]()
        make_special(target, kind)
        raw = stop_event(text=None, transcript_path=str(transcript))
        printed = stop(project, raw, session=session)
    if blocked(printed):
        assert POSITIONS[position], f"blocked with a {kind} as the {position}"


@pytest.fixture(scope="module", autouse=True)
def report(figures: Callable[[Figure], None]) -> Iterator[None]:
    began = time.monotonic()
    yield
    note = f"{time.monotonic() - began:.0f} s; worst latency: one case"
    figures(Figure("hook fuzz", sum(TRIED.values()), "cases", worst_s=SLOWEST_S[0], note=note))
