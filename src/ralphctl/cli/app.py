"""The ``ralphctl`` command.

``ralphctl run`` and ``ralphctl resume`` start at once: typer turns every command registered
with an app into a click command before it parses anything (35 signatures read), so these two
are run from an app of their own, with the other commands' modules never imported. Every other
command line goes to the whole app (``app``, built on first use).
"""

from __future__ import annotations

import gc
import logging
import sys
from functools import cache
from typing import Any

import typer

from ralphctl import __version__
from ralphctl.cli.common import UsageError, fail
from ralphctl.domain.states import EXIT_USAGE
from ralphctl.settings import ConfigError
from ralphctl.store.errors import StoreError

#: The engine logs what it does for `ralphctl serve`'s log (which attaches its own handlers);
#: in a command, the loop's events already say it: Python's last-resort handler must not print
#: those records a second time.
logging.getLogger("ralphctl").addHandler(logging.NullHandler())

HELP = "Run autonomous coding agents in Ralph Wiggum loops, with budgets you can trust."
_SETTINGS: dict[str, Any] = {
    "add_completion": False,
    "pretty_exceptions_enable": False,
    "rich_markup_mode": "rich",
}
_FOREGROUND = ("run", "resume")  # the commands with an app of their own


@cache
def whole_app() -> typer.Typer:
    """Every command."""
    from ralphctl.cli import (
        agents,
        config,
        demo,
        doctor,
        inspect,
        logs,
        loops,
        notify,
        plugin,
        rollback,
        run,
        serve,
        session,
        tell,
        worker,
        workers,
        workflow,
    )

    app = typer.Typer(name="ralphctl", help=HELP, no_args_is_help=True, **_SETTINGS)
    app.command("run")(run.run_command)
    app.command("resume")(run.resume_command)
    app.command("status")(inspect.status_command)
    app.command("history")(inspect.history_command)
    app.command("logs")(logs.logs_command)
    app.command("rollback")(rollback.rollback_command)
    app.command("tell")(tell.tell_command)
    app.command("cancel")(session.cancel_command)
    app.command("sessions")(session.sessions_command)
    app.command("demo")(demo.demo_command)
    app.command("serve")(serve.serve_command)
    app.command("doctor")(doctor.doctor_command)
    app.command("worker")(worker.worker_command)
    app.add_typer(workflow.app, name="workflow")
    app.add_typer(plugin.app, name="plugin")
    app.add_typer(loops.app, name="loops")
    app.add_typer(config.app, name="config")
    app.add_typer(agents.app, name="agents")
    app.add_typer(notify.app, name="notify")
    app.add_typer(workers.app, name="workers")
    app.callback()(_root)
    return app


def _foreground_app(name: str) -> typer.Typer:
    """``ralphctl run`` or ``ralphctl resume`` alone (a one-command app is that command)."""
    from ralphctl.cli import run

    app = typer.Typer(**_SETTINGS)
    app.command(name)(run.run_command if name == "run" else run.resume_command)
    return app


def __getattr__(name: str) -> typer.Typer:
    if name == "app":  # ``from ralphctl.cli.app import app``: the whole app
        return whole_app()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _version(value: bool) -> None:
    if value:
        typer.echo(f"ralphctl {__version__}")
        raise typer.Exit()


def _root(
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Show the version and exit."
    ),
) -> None:
    """Run autonomous coding agents in Ralph Wiggum loops, with budgets you can trust."""


def main() -> None:
    """Console-script entry point: map known errors to clear messages and exit codes."""
    args = sys.argv[1:]
    try:
        # standalone: typer reports its own usage errors with exit code 2
        if args and args[0] in _FOREGROUND:
            _foreground_app(args[0])(args[1:], prog_name=f"ralphctl {args[0]}")
        else:
            whole_app()()
    except (ConfigError, UsageError) as exc:
        fail(str(exc), EXIT_USAGE)
    except StoreError as exc:
        fail(f"database: {exc}", EXIT_USAGE)
    finally:
        # The process ends here: its shutdown need not have the garbage collector walk every
        # object the imports made once more (70–110 ms of CPU per command, measured).
        gc.freeze()
