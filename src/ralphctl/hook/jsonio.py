"""JSON in and out of the Stop hook without ``import json``.

``import json`` costs about 12 ms on a slow machine (it loads ``re``, and with it ``enum`` and
``functools``): a third of the hook's budget. Its C accelerator ``_json`` parses and quotes
on its own and imports nothing, so the hook calls it directly, with ``json.loads``' defaults
and ``json.dumps``' output. Invalid input goes to ``json`` itself, for its error message
(``_json`` can only raise its error once ``json.decoder`` is loaded).
"""

from __future__ import annotations

import _json

#: What ``json`` skips around a document.
_WHITESPACE = " \t\n\r"
_CONSTANTS = {"NaN": float("nan"), "Infinity": float("inf"), "-Infinity": float("-inf")}


class _Defaults:
    """The decoder settings ``_json.make_scanner`` reads: those of ``json.loads``."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    parse_constant = _CONSTANTS.__getitem__


#: typeshed asks for a ``make_scanner``; any object with the settings above will do.
_scan = _json.make_scanner(_Defaults())  # type: ignore[arg-type]
_quote = _json.encode_basestring_ascii


def loads(data: bytes | str) -> object:
    """``json.loads`` for UTF-8 bytes or text: the same value, or the same ValueError."""
    text = data.decode() if isinstance(data, bytes) else data
    start = len(text) - len(text.lstrip(_WHITESPACE))
    try:
        value, end = _scan(text, start)
    except (StopIteration, SystemError):  # _json raises its errors only once json is loaded
        return _json_loads(text)
    if text[end:].strip(_WHITESPACE):
        return _json_loads(text)
    return value


def _json_loads(text: str) -> object:
    """What is not one JSON document is left to ``json`` itself, for its error message."""
    import json

    return json.loads(text)


def dumps(document: dict[str, str]) -> str:
    """``json.dumps(document)`` for a flat object of strings (ASCII, ``", "`` and ``": "``)."""
    fields = ", ".join(f"{_quote(key)}: {_quote(value)}" for key, value in document.items())
    return "{" + fields + "}"
