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


def dumps(document: object) -> str:
    """``json.dumps(document)`` (ASCII, ``", "`` and ``": "``) for dicts with text keys, lists,
    text, numbers, booleans and None; TypeError for anything else."""
    if isinstance(document, str):
        return _quote(document)
    if document is None:
        return "null"
    if document is True or document is False:
        return "true" if document else "false"
    if isinstance(document, int):
        return int.__repr__(document)
    if isinstance(document, float):
        return _number(document)
    if isinstance(document, dict):
        fields = ", ".join(f"{_key(key)}: {dumps(value)}" for key, value in document.items())
        return "{" + fields + "}"
    if isinstance(document, list | tuple):
        return "[" + ", ".join(dumps(item) for item in document) + "]"
    raise TypeError(f"cannot write {type(document).__name__} as JSON")


def _key(key: object) -> str:
    if not isinstance(key, str):
        raise TypeError(f"JSON object keys are text, not {type(key).__name__}")
    return _quote(key)


def _number(value: float) -> str:
    import math  # only queued history records hold numbers, never a decision

    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    return float.__repr__(value)
