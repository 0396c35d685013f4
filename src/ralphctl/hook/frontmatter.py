"""A strict reader and writer for the flat ``key: scalar`` YAML frontmatter of loop trackers.

It understands the subset ralphctl writes (double-quoted escaped strings, ints, floats, bools,
null) and what Anthropic's ralph-loop plugin writes (plain unquoted strings, ``null``, empty
values). Anything else (nesting, lists, anchors, inline comments, an unclosed block) raises
``FrontmatterError``, and the hook fails open. Stdlib only, without ``re``: it runs on the
Stop hook's hot path, where an import costs more than the parse.
"""

from __future__ import annotations

Scalar = str | int | float | bool | None

DELIMITER = "---"

_SHORT_ESCAPES = {
    "\\": "\\",
    '"': '"',
    "/": "/",
    "0": "\0",
    "a": "\a",
    "b": "\b",
    "e": "\x1b",
    "f": "\f",
    "n": "\n",
    "r": "\r",
    "t": "\t",
    "v": "\v",
}
_ESCAPE_OF = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r", "\t": "\\t"}
_HEX_ESCAPES = {"x": 2, "u": 4, "U": 8}
_HEX_DIGITS = frozenset("0123456789abcdefABCDEF")
_NUMBER_CHARS = frozenset("0123456789+-.eE")
#: A plain value may not start with these: they introduce YAML we do not read.
_INDICATORS = frozenset("[]{}|>&*!%@`#,?")
_NULLS = frozenset({"", "null", "Null", "NULL", "~"})
_BOOLS = {"true": True, "True": True, "TRUE": True, "false": False, "False": False}
_INFINITY = float("inf")


class FrontmatterError(ValueError):
    """The text is not a frontmatter block this module can read faithfully."""


def parse(text: str, *, verbatim_quotes: bool = False) -> tuple[dict[str, Scalar], str]:
    """Split ``text`` into its frontmatter fields and the body after the closing ``---``.

    ``verbatim_quotes`` reads ``"…"`` values as the official plugin's shell script does: the
    text between the outer quotes, unescaped (it writes them without escaping).
    """
    head, newline, rest = text.partition("\n")
    if head.rstrip("\r") != DELIMITER:
        raise FrontmatterError("no frontmatter: the first line is not ---")
    fields: dict[str, Scalar] = {}
    while True:
        if not newline:
            raise FrontmatterError("the frontmatter is never closed by a --- line")
        line, newline, rest = rest.partition("\n")
        line = line.rstrip("\r")
        if line == DELIMITER:
            return fields, rest
        if not line.strip() or line.startswith("#"):
            continue
        key, value = _entry(line)
        if key in fields:
            raise FrontmatterError(f"duplicate key {key!r}")
        fields[key] = _scalar(value, verbatim_quotes)


def render(fields: dict[str, Scalar], body: str) -> str:
    """The tracker text: ``fields`` as frontmatter (strings always quoted), then ``body``."""
    lines = [DELIMITER]
    for key, value in fields.items():
        if not _is_key(key):
            raise ValueError(f"not a frontmatter key: {key!r}")
        lines.append(f"{key}: {_format(value)}")
    lines.append(DELIMITER)
    return "\n".join(lines) + "\n" + body


def _entry(line: str) -> tuple[str, str]:
    key, colon, value = line.partition(":")
    if not colon or not _is_key(key):
        raise FrontmatterError(f"not a 'key: value' line: {line[:80]!r}")
    if value and value[0] not in " \t":
        raise FrontmatterError(f"no space after the colon of {key!r}")
    return key, value.strip(" \t")


def _is_key(key: str) -> bool:
    return key.isascii() and key.isidentifier()


def _scalar(value: str, verbatim_quotes: bool) -> Scalar:
    if value in _NULLS:
        return None
    if value in _BOOLS:
        return _BOOLS[value]
    first = value[0]
    if first == '"':
        if len(value) < 2 or value[-1] != '"':
            raise FrontmatterError(f"unterminated double-quoted value: {value[:80]!r}")
        return value[1:-1] if verbatim_quotes else _unescape(value[1:-1])
    if first == "'":
        return _single_quoted(value)
    if first in _INDICATORS or value.startswith(("- ", "-\t")) or value == "-":
        raise FrontmatterError(f"unsupported YAML value: {value[:80]!r}")
    if " #" in value or "\t#" in value or ": " in value:
        raise FrontmatterError(f"ambiguous plain value (quote it): {value[:80]!r}")
    return _number(value)


def _number(value: str) -> Scalar:
    """An int or a finite float if ``value`` spells one, else the plain string itself."""
    if not _NUMBER_CHARS.issuperset(value) or not any(c.isdigit() for c in value):
        return value
    digits = value[1:] if value[0] in "+-" else value
    if digits.isdigit():
        return int(value)
    try:
        number = float(value)
    except ValueError:
        return value
    if not -_INFINITY < number < _INFINITY:
        raise FrontmatterError(f"number out of range: {value[:80]!r}")
    return number


def _single_quoted(value: str) -> str:
    if len(value) < 2 or value[-1] != "'":
        raise FrontmatterError(f"unterminated single-quoted value: {value[:80]!r}")
    inner = value[1:-1]
    if "'" in inner.replace("''", ""):
        raise FrontmatterError(f"bad quote inside a single-quoted value: {value[:80]!r}")
    return inner.replace("''", "'")


def _unescape(inner: str) -> str:
    parts: list[str] = []
    position = 0
    while True:
        backslash = inner.find("\\", position)
        chunk = inner[position:] if backslash < 0 else inner[position:backslash]
        if '"' in chunk:
            raise FrontmatterError(f'unescaped " inside a double-quoted value: {inner[:80]!r}')
        parts.append(chunk)
        if backslash < 0:
            return "".join(parts)
        code = inner[backslash + 1 : backslash + 2]
        if code in _SHORT_ESCAPES:
            parts.append(_SHORT_ESCAPES[code])
            position = backslash + 2
        elif code in _HEX_ESCAPES:
            width = _HEX_ESCAPES[code]
            digits = inner[backslash + 2 : backslash + 2 + width]
            if len(digits) != width or not _HEX_DIGITS.issuperset(digits):
                raise FrontmatterError(f"bad \\{code} escape in {inner[:80]!r}")
            codepoint = int(digits, 16)
            if codepoint > 0x10FFFF:
                raise FrontmatterError(f"escape beyond Unicode in {inner[:80]!r}")
            parts.append(chr(codepoint))
            position = backslash + 2 + width
        else:
            raise FrontmatterError(f"unknown escape \\{code} in {inner[:80]!r}")


def _format(value: Scalar) -> str:
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not -_INFINITY < value < _INFINITY:  # also false for NaN
            raise ValueError(f"cannot write a non-finite number: {value}")
        return repr(value)
    return '"' + "".join(map(_escape_char, value)) + '"'


def _escape_char(char: str) -> str:
    if char in _ESCAPE_OF:
        return _ESCAPE_OF[char]
    if char.isprintable():
        return char
    code = ord(char)
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"
