"""Reading the user's agent arguments (``extra_args``): which flags they give, and a flag's
value, so an adapter can let the user's flags win over its own and refuse the ones it cannot
honour."""

from __future__ import annotations

from collections.abc import Iterable, Sequence


def given_flags(args: Iterable[str]) -> set[str]:
    """The flags in ``args`` by name: ``--model=x`` counts as ``--model``."""
    return {arg.partition("=")[0] for arg in args if arg.startswith("-")}


def option_value(args: Sequence[str], *names: str) -> str | None:
    """The value of the first of ``names`` in ``args``, given as ``name=value`` or
    ``name value`` (a following flag is not a value); None when absent or valueless."""
    for i, arg in enumerate(args):
        name, equals, value = arg.partition("=")
        if name in names and equals:
            return value
        if arg in names and i + 1 < len(args) and not args[i + 1].startswith("-"):
            return args[i + 1]
    return None
