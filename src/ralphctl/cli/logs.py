"""`ralphctl logs`: what the agent printed, iteration by iteration, as text or raw."""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING

import typer

from ralphctl.cli.common import UsageError, err_console, open_store
from ralphctl.cli.loop_flags import DB
from ralphctl.domain.states import EXIT_INTERRUPTED
from ralphctl.store.records import LoopRecord

if TYPE_CHECKING:
    from ralphctl.store.repository import Store

NOTHING_RECORDED = (
    "no output recorded (the agent printed nothing, the iteration ran before ralphctl kept "
    "transcripts, or [loops] transcript_retention_days removed it)"
)


def logs_command(
    loop_id: str = typer.Argument(..., help="A loop id, or a unique prefix of one."),
    iteration: int | None = typer.Option(
        None, "--iteration", "-n", min=1, help="Only this iteration (default: every one)."
    ),
    follow: bool = typer.Option(
        False,
        "--follow",
        "-f",
        help="Print new output as it arrives, iteration after iteration, while the loop runs "
        "(from --iteration, else from the latest one).",
    ),
    raw: bool = typer.Option(
        False, "--raw", help="The output exactly as the agent printed it (stream-json)."
    ),
    text: bool = typer.Option(False, "--text", help="Readable text (the default)."),
    db: str | None = DB,
) -> None:
    """Show what the agent printed in a loop's iterations (kept whole, compressed)."""
    # Imported here: they import the store's SQLAlchemy modules, which every other command
    # would then pay for at start-up.
    from ralphctl.engine.transcript_reader import IterationNotFound, check_iteration

    if raw and text:
        raise UsageError("--raw and --text exclude each other: choose one")
    store = open_store(db)
    loop = store.get_loop(loop_id)
    if iteration is not None:
        try:
            check_iteration(store, loop, iteration)
        except IterationNotFound as exc:
            raise UsageError(str(exc)) from None
    try:
        _print(loop, _sections(store, loop, iteration, follow=follow), raw=raw)
    except KeyboardInterrupt:
        raise typer.Exit(EXIT_INTERRUPTED) from None
    except BrokenPipeError:  # `ralphctl logs … | head`
        sys.stderr.close()  # nothing more can be said; keep Python from complaining at exit
        raise typer.Exit(0) from None


Sections = Iterable[tuple[int, Iterator[bytes]]]


def _sections(store: Store, loop: LoopRecord, iteration: int | None, *, follow: bool) -> Sections:
    """Each iteration to show with its output: the one asked for, or every one (following:
    from the one asked for, else the newest, on)."""
    from ralphctl.engine.transcript_reader import follow_loop, latest_iteration
    from ralphctl.store.transcript_chunks import iter_transcript

    latest = latest_iteration(store, loop)
    if follow:
        return follow_loop(store, loop.id, iteration or max(latest, 1))
    if iteration is None and not latest:
        err_console.print(f"loop {loop.id} has no iterations yet")
    numbers = [iteration] if iteration is not None else range(1, latest + 1)
    return ((n, iter_transcript(store, loop.id, n)) for n in numbers)


def _print(loop: LoopRecord, sections: Sections, *, raw: bool) -> None:
    from ralphctl.engine.transcript_reader import parser_for, transcript_lines, transcript_text

    out = sys.stdout
    for n, chunks in sections:
        if raw:
            _raw(chunks)
            continue
        out.write(f"── iteration {n} ──\n")
        shown = False
        for piece in transcript_text(transcript_lines(chunks), parser_for(loop)):
            out.write(piece)
            shown = True
        if not shown:
            err_console.print(f"iteration {n}: {NOTHING_RECORDED}", style="dim")
        out.flush()


def _raw(chunks: Iterator[bytes]) -> None:
    out = sys.stdout.buffer
    for chunk in chunks:
        out.write(chunk)
        out.flush()
