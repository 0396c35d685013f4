"""Completion and blocked markers: parse the configured signal, detect it in the agent's words.

Strict by design (DESIGN.md §3; user guide: docs/completion.md). Only the agent's final
assistant text is examined, and only a deliberate declaration counts:

- tagged marker (``<promise>TEXT</promise>``, or the seed's ``<ringmaster>TEXT</ringmaster>``,
  read by exactly the same rules): the last *valid* tag is the agent's final word.
  A tag is invalid inside a fenced block or inline code, directly quoted, on a ``>`` quote
  line, in a sentence with a negation or condition word (``_NEGATIONS``), or on a line that
  echoes the prompt. Text without a tag never matches.
- plain marker (``RALPH_DONE``, ``<!-- WORKFLOW_COMPLETE -->``): only the last non-empty line.
- blocked: ``BLOCKED: reason`` as a tag or as the last non-empty line; whichever of the
  declarations comes last wins.

Every scan is linear in the text (each stretch between two tags is searched a bounded number
of times), so a huge or hostile message costs about as much as reading it. The scans use
``str`` methods, not ``re``: the Stop hook imports this module on every stop, and ``re``
(with the ``enum`` and ``functools`` it pulls in) would cost more than the whole decision.
"""

from __future__ import annotations

from bisect import bisect_right

from ralphctl.domain.value import value

TYPE_CHECKING = False  # the typing module is one more import on the hook's hot path
if TYPE_CHECKING:
    from collections.abc import Iterator

#: The tag names a tagged marker may use; ``promise`` is the default and the blocked tag of
#: plain markers.
TAGS = ("promise", "ringmaster")
_PROMISE = TAGS[0]
_COMMENT_OPEN, _COMMENT_CLOSE = "<!--", "-->"
#: Sentence boundaries: a negation or condition word counts only within the tag's sentence.
_BOUNDARIES = ".!?:\n"
#: Words that turn a tag into a statement about the future, a condition or a refusal; also
#: "after I/we" and any "n't" contraction. Matched as whole words, ignoring case.
_NEGATIONS = frozenset(
    {"not", "no", "never", "cannot", "until", "unless", "once", "if", "when", "whenever", "before"}
)
_AFTER_WHOM = frozenset({"i", "we"})
_APOSTROPHES = "'’"
#: Case folding as ``re.IGNORECASE`` does it for these words: one character each.
_FOLD = str.maketrans({"\u0130": "i", "\u0131": "i", "\u017f": "s"})
_QUOTES = frozenset("\"'`“”‘’«»„‹›")
_NO_REASON = "no reason given"


def normalise(text: str) -> str:
    """Trim ``text`` and collapse every internal whitespace run to one space."""
    return " ".join(text.split())


@value(frozen=True, slots=True)
class Marker:
    """A parsed completion signal: ``tagged`` means the ``<tag>TEXT</tag>`` form, ``tag`` one
    of ``TAGS`` (the tag scanned for blocked declarations too)."""

    text: str
    tagged: bool
    tag: str = _PROMISE

    def __post_init__(self) -> None:
        if not self.text.strip():
            raise ValueError("a completion marker cannot be empty")
        if self.text != normalise(self.text):
            raise ValueError(f"marker text must be whitespace-normalised: {self.text!r}")
        if self.tag not in TAGS:
            raise ValueError(f"unknown marker tag {self.tag!r}: use one of {', '.join(TAGS)}")
        if _holds_a_tag(self.text):
            raise ValueError(
                f"a marker cannot contain a <promise> or <ringmaster> tag: {self.text!r}"
            )
        if _blocked(self.text) is not None:
            raise ValueError(f"a marker cannot be a BLOCKED: declaration: {self.text!r}")

    @property
    def signal(self) -> str:
        """The exact line the agent should print to declare completion."""
        return f"<{self.tag}>{self.text}</{self.tag}>" if self.tagged else self.text

    @property
    def blocked_signal(self) -> str:
        """How the agent declares it is blocked, as a template (``<the reason>``)."""
        reason = "BLOCKED: <the reason>"
        return f"<{self.tag}>{reason}</{self.tag}>" if self.tagged else reason


def parse_marker(signal: str) -> Marker:
    """Parse a configured marker: ``<promise>T</promise>`` (or ``<ringmaster>T</ringmaster>``),
    ``<!-- T -->`` or a plain ``T``.

    Raises ValueError for an empty marker: whether that means "disabled" is the caller's call.
    """
    stripped = signal.strip()
    for name in TAGS:
        if (tag := _inside_tag(stripped, name)) is not None:
            return Marker(normalise(tag), tagged=True, tag=name)
    if (comment := _inside_comment(stripped)) is not None:
        return Marker(normalise(comment), tagged=False)
    return Marker(normalise(stripped), tagged=False)


def promise(text: str) -> Marker:
    """The marker of ``--completion-promise TEXT``: always tagged (an already tagged TEXT too)."""
    tag = _inside_tag(text.strip(), _PROMISE)
    return Marker(normalise(text if tag is None else tag), tagged=True)


@value(frozen=True, slots=True)
class Detection:
    """What the agent declared; ``evidence`` is the matched tag or line, for the record."""

    completed: bool
    blocked_reason: str | None
    evidence: str | None


_NOTHING = Detection(completed=False, blocked_reason=None, evidence=None)


def detect(final_text: str, marker: Marker, *, prompt: str | None = None) -> Detection:
    """Decide whether the agent's final text declares completion, or that it is blocked.

    ``prompt``, when given, lets lines that merely echo our instructions be ignored.
    """
    text = _unix_newlines(final_text)
    last = _last_line(text)
    if last is None:
        return _NOTHING
    echoes = _echo_lines(prompt)
    reading = _Reading(text, echoes, marker.signal, marker.tag)
    start, line = last
    if not reading.in_fence(start):
        declared = _line_declaration(line, None if marker.tagged else marker, tags=False)
        # A completion line has one spelling, so the prompt may show it verbatim; a blocked
        # line carries a reason, so a verbatim copy of a prompt line is the template echoed.
        if declared and not (declared.blocked_reason and normalise(line) in echoes):
            return declared
    tag = reading.last_valid_tag()
    return _NOTHING if tag is None else _tag_declaration(text, tag, marker)


def detect_in_tracker(body: str, marker: Marker) -> Detection:
    """Tracker mode: only the body's last non-empty line counts, in any marker form.

    A template that mentions the marker in its instructions therefore cannot end the loop.
    """
    text = _unix_newlines(body)
    last = _last_line(text)
    if last is None or _Fences(text).contain(last[0]):
        return _NOTHING
    return _line_declaration(last[1], marker, tags=True) or _NOTHING


def first_declaration(final: Detection, tracker: Detection | None) -> Detection:
    """Both loop modes: the agent's final text decides first; without a declaration there, the
    tracker's last line (``detect_in_tracker``) does."""
    if final.completed or final.blocked_reason is not None or tracker is None:
        return final
    return tracker


def _last_line(text: str) -> tuple[int, str] | None:
    """Offset and stripped content of the last non-empty line, or None for a blank text."""
    body = text.rstrip()
    if not body:
        return None
    start = body.rfind("\n") + 1
    return start, body[start:].strip()


def _echo_lines(prompt: str | None) -> frozenset[str]:
    if not prompt:
        return frozenset()
    lines = _unix_newlines(prompt).split("\n")
    return frozenset(filter(None, map(normalise, lines)))


def _blocked(content: str) -> str | None:
    """The reason of a normalised ``[WORKFLOW_]BLOCKED: reason`` declaration, else None."""
    rest = content.removeprefix("WORKFLOW_")
    if not rest.startswith("BLOCKED"):
        return None
    rest = rest[len("BLOCKED") :].lstrip(" ")
    if not rest.startswith(":"):
        return None
    return rest[1:].strip() or _NO_REASON


def _unix_newlines(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _inside(text: str, opening: str, closing: str) -> str | None:
    """What lies between ``opening`` and ``closing`` if ``text`` is exactly that, else None."""
    if len(text) < len(opening) + len(closing):
        return None
    if text.startswith(opening) and text.endswith(closing):
        return text[len(opening) : len(text) - len(closing)]
    return None


def _inside_tag(text: str, name: str) -> str | None:
    return _inside(text, f"<{name}>", f"</{name}>")


def _inside_any_tag(text: str) -> str | None:
    for name in TAGS:
        if (inside := _inside_tag(text, name)) is not None:
            return inside
    return None


def _holds_a_tag(text: str) -> bool:
    return any(f"<{name}>" in text or f"</{name}>" in text for name in TAGS)


def _inside_comment(text: str) -> str | None:
    return _inside(text, _COMMENT_OPEN, _COMMENT_CLOSE)


def _line_declaration(line: str, marker: Marker | None, *, tags: bool) -> Detection | None:
    """Read a stripped last line: ``X``, ``<!-- X -->`` (and ``<promise>X</promise>`` if tags)."""
    wrapped = _inside_comment(line)
    if wrapped is None and tags:
        wrapped = _inside_any_tag(line)
    content = normalise(line if wrapped is None else wrapped)
    if wrapped is not None and _holds_a_tag(content):
        return None
    if (reason := _blocked(content)) is not None:
        return Detection(completed=False, blocked_reason=reason, evidence=line)
    if marker is not None and content == marker.text:
        return Detection(completed=True, blocked_reason=None, evidence=line)
    return None


def _tag_declaration(text: str, tag: tuple[int, int], marker: Marker) -> Detection:
    start, end = tag
    content = normalise(text[start + len(marker.tag) + 2 : end - len(marker.tag) - 3])
    evidence = text[start:end]
    if (reason := _blocked(content)) is not None:
        return Detection(completed=False, blocked_reason=reason, evidence=evidence)
    if marker.tagged and content == marker.text:
        return Detection(completed=True, blocked_reason=None, evidence=evidence)
    return _NOTHING


def _find_tags(text: str, name: str) -> list[tuple[int, int]]:
    """Spans of ``<name>…</name>``; a close pairs with the nearest unpaired open."""
    tags: list[tuple[int, int]] = []
    opened = -1
    tag_name = name + ">"
    found = text.find(tag_name)
    while found >= 0:
        end = found + len(tag_name)
        if found >= 1 and text[found - 1] == "<":
            opened = found - 1
        elif opened >= 0 and found >= 2 and text[found - 2 : found] == "</":
            tags.append((opened, end))
            opened = -1
        found = text.find(tag_name, end)
    return tags


def _mask(text: str, tags: list[tuple[int, int]]) -> str:
    """``text`` with each tag blanked (newlines kept), so prose scans never see tag contents."""
    parts: list[str] = []
    position = 0
    for start, end in tags:
        parts.append(text[position:start])
        parts.append("\n".join(" " * len(piece) for piece in text[start:end].split("\n")))
        position = end
    parts.append(text[position:])
    return "".join(parts)


def _negated_sentences(masked: str, tags: list[tuple[int, int]]) -> list[bool]:
    """Per tag: does its sentence hold a negation or condition word (other tags blanked)?

    A forward pass looks before each tag, a backward pass after it; each gap between two tags
    is scanned a bounded number of times, so the whole is linear.
    """
    before: list[bool] = []
    negated, low = False, 0
    for start, end in tags:
        if (cut := _last_boundary(masked, low, start)) >= 0:
            negated, low = False, cut + 1
        negated = negated or _has_negation(masked[low:start])
        before.append(negated)
        low = end
    result = before[:]
    negated, high = False, len(masked)
    for index in range(len(tags) - 1, -1, -1):
        start, end = tags[index]
        if (cut := _first_boundary(masked, end, high)) >= 0:
            negated, high = False, cut
        negated = negated or _has_negation(masked[end:high])
        result[index] = before[index] or negated
        high = start
    return result


def _last_boundary(text: str, low: int, high: int) -> int:
    """The offset of the last sentence boundary in ``text[low:high]``, or -1."""
    last = -1
    for mark in _BOUNDARIES:  # each search only looks after the best offset so far
        if (at := text.rfind(mark, max(low, last + 1), high)) >= 0:
            last = at
    return last


def _first_boundary(text: str, low: int, high: int) -> int:
    """The offset of the first sentence boundary in ``text[low:high]``, or -1."""
    first = high
    for mark in _BOUNDARIES:  # each search only looks before the best offset so far
        if (at := text.find(mark, low, first)) >= 0:
            first = at
    return -1 if first == high else first


def _has_negation(sentence: str) -> bool:
    """Does ``sentence`` hold a negation or condition word (whole words, any case)?"""
    if not sentence or sentence.isspace():
        return False
    folded = sentence.translate(_FOLD).lower()  # same length: the one 2-character case is mapped
    if not _NEGATIONS.isdisjoint(folded.translate(_WORD_RUNS).split()):
        return True
    after = "after"
    if any(
        _is_whole_word(folded, at, len(after)) and _names_us(folded, at + len(after))
        for at in _find_all(folded, after)
    ):
        return True
    return any(
        at >= 1 and folded[at - 1] == "n" and not _is_word_char(folded, at + 2)
        for apostrophe in _APOSTROPHES
        for at in _find_all(folded, apostrophe + "t")
    )


class _WordRuns(dict[int, int]):
    """A ``str.translate`` table that blanks every character ``re`` does not count in ``\\w``."""

    def __missing__(self, code: int) -> int:
        char = chr(code)
        self[code] = kept = code if char.isalnum() or char == "_" else ord(" ")
        return kept


_WORD_RUNS = _WordRuns()


def _names_us(text: str, position: int) -> bool:
    """Do whitespace, then the whole word "I" or "we", follow ``position``?"""
    start = position
    while start < len(text) and text[start].isspace():
        start += 1
    if start == position:
        return False
    return any(
        text.startswith(whom, start) and not _is_word_char(text, start + len(whom))
        for whom in _AFTER_WHOM
    )


def _find_all(text: str, needle: str) -> Iterator[int]:
    at = text.find(needle)
    while at >= 0:
        yield at
        at = text.find(needle, at + 1)


def _is_whole_word(text: str, start: int, length: int) -> bool:
    return not _is_word_char(text, start - 1) and not _is_word_char(text, start + length)


def _is_word_char(text: str, position: int) -> bool:
    """Is there a word character (``re``'s ``\\w``) at ``position``? None outside the text."""
    if position < 0 or position >= len(text):
        return False
    char = text[position]
    return char.isalnum() or char == "_"


def _line_starts(text: str, tags: list[tuple[int, int]]) -> list[int]:
    """Per tag, the offset of the line it starts on (linear: each range is searched once)."""
    starts: list[int] = []
    line_start, low = 0, 0
    for start, _ in tags:
        newline = text.rfind("\n", low, start)
        if newline >= 0:
            line_start = newline + 1
        starts.append(line_start)
        low = start
    return starts


def _run_end(text: str, start: int, char: str) -> int:
    """Where the run of ``char`` that begins at ``start`` ends (amortised linear, in C)."""
    end, size = start, 64
    while True:
        chunk = text[end : end + size]
        rest = chunk.lstrip(char)
        if rest or len(chunk) < size:
            return end + len(chunk) - len(rest)
        end, size = end + size, size * 2


class _Fences:
    """Fenced code blocks (``` or ~~~, any indent); an unclosed fence runs to the end."""

    __slots__ = ("_ends", "_starts")

    def __init__(self, text: str) -> None:
        self._starts: list[int] = []
        self._ends: list[int] = []
        if "```" not in text and "~~~" not in text:
            return
        opening = ""
        end = -1
        for line in text.split("\n"):
            start, end = end + 1, end + 1 + len(line)
            content = line.lstrip(" \t")
            char = content[:1]
            if char not in ("`", "~"):
                continue
            fence = content[: _run_end(content, 0, char)]
            if len(fence) < 3:
                continue
            rest = content[len(fence) :]
            if not opening:
                if not (char == "`" and "`" in rest):
                    opening = fence
                    self._starts.append(start)
            elif char == opening[0] and len(fence) >= len(opening) and not rest.strip():
                opening = ""
                self._ends.append(end)
        if opening:
            self._ends.append(len(text))

    def contain(self, position: int) -> bool:
        index = bisect_right(self._starts, position) - 1
        return index >= 0 and position < self._ends[index]


def _code_spans(line: str, offset: int) -> list[tuple[int, int]]:
    """Inline code spans of one line: a backtick run closed by the next run of equal length."""
    runs: list[tuple[int, int]] = []
    start = line.find("`")
    while start >= 0:
        end = _run_end(line, start, "`")
        runs.append((start, end))
        start = line.find("`", end)
    closer = [-1] * len(runs)
    seen: dict[int, int] = {}
    for index in range(len(runs) - 1, -1, -1):
        length = runs[index][1] - runs[index][0]
        closer[index] = seen.get(length, -1)
        seen[length] = index
    spans: list[tuple[int, int]] = []
    index = 0
    while index < len(runs):
        close = closer[index]
        if close < 0:
            index += 1
        else:
            spans.append((offset + runs[index][0], offset + runs[close][1]))
            index = close + 1
    return spans


class _Reading:
    """One final text scanned once, so that judging every tag stays linear overall."""

    __slots__ = ("_echoes", "_exempt", "_fences", "_lines", "_masked", "tags", "text")

    def __init__(self, text: str, echoes: frozenset[str], exempt: str, tag: str) -> None:
        self.text = text
        self.tags = _find_tags(text, tag)
        self._masked = _mask(text, self.tags) if self.tags else text
        self._fences = _Fences(self._masked)
        self._echoes = echoes
        self._exempt = exempt
        self._lines: dict[int, tuple[bool, list[tuple[int, int]]]] = {}

    def in_fence(self, position: int) -> bool:
        return self._fences.contain(position)

    def last_valid_tag(self) -> tuple[int, int] | None:
        """The last tag that is not code, quoted, negated or conditional, nor an echo."""
        negated = _negated_sentences(self._masked, self.tags)
        line_starts = _line_starts(self.text, self.tags)
        for index in range(len(self.tags) - 1, -1, -1):
            start, end = self.tags[index]
            if negated[index] or self.in_fence(start) or self._quoted(start, end):
                continue
            ignored_line, spans = self._line(line_starts[index])
            span = bisect_right(spans, (start, len(self.text))) - 1
            if not ignored_line and not (span >= 0 and start < spans[span][1]):
                return start, end
        return None

    def _quoted(self, start: int, end: int) -> bool:
        before = self.text[start - 1] if start else ""
        after = self.text[end] if end < len(self.text) else ""
        return before in _QUOTES or after in _QUOTES

    def _line(self, start: int) -> tuple[bool, list[tuple[int, int]]]:
        """Whether a line is ignored (``>`` quote or prompt echo), and its code spans. Cached."""
        if start not in self._lines:
            end = self.text.find("\n", start)
            end = len(self.text) if end < 0 else end
            line = normalise(self.text[start:end])
            echoed = line in self._echoes and line != self._exempt
            quoted = self.text[start:end].lstrip(" \t").startswith(">")
            self._lines[start] = (echoed or quoted, _code_spans(self._masked[start:end], start))
        return self._lines[start]
