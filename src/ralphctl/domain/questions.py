"""Did the agent end its answer by asking the (absent) user something?

Deterministic heuristics over the final text's prose. Fenced and inline code, ``>`` quotes,
double-quoted text, URLs, headings, the status block and closing pleasantries ("let me know if
you have any questions") are set aside first. Then the agent asked when, among the last
sentences:

- the very last sentence is a question, or the last prose sentence is one and only list
  items (the options) follow it;
- a sentence requests an answer: "please confirm", "let me know which…", "I need your
  input", "waiting for your…";
- a question addresses the user ("should I…?", "would you like me to…?", "which option do you
  prefer?") and no later sentence settles it (one that starts with "I" or "We", or says
  "I'll…", "for now…", "I went with…").

A question the agent answers itself ("Why did it fail? The fixture was stale.") does not count.
"""

from __future__ import annotations

import re

from ralphctl.domain.status_block import END, START

#: How many sentences from the end are looked at.
TAIL_SENTENCES = 4

_FENCE = re.compile(r"[ \t]*(`{3,}|~{3,})")
_INLINE_CODE = re.compile(r"`[^`\n]*`")
_QUOTED = re.compile(r"\"[^\"\n]*\"|“[^”\n]*”|«[^»\n]*»")
_URL = re.compile(r"\b[A-Za-z][\w+.-]*://\S+")
_LIST_ITEM = re.compile(r"(?:[-*+]|\d{1,3}[.)])\s+")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_PLEASANTRY = re.compile(
    r"\blet me know if (?:you )?(?:have|need|want|run into|see|spot|there (?:is|are)) "
    r"(?:any )?(?:other |further |more )?"
    r"(?:questions?|feedback|concerns?|issues?|problems?|anything(?: else)?|changes|help|tweaks)"
    r"|\b(?:feel free|don't hesitate|do not hesitate) to (?:ask|reach out|let me know)"
    r"|\bhappy to help\b|\bhope (?:this|that) helps\b"
    r"|^(?:is there )?anything else(?: (?:I can|you'd like|you want)[^?]*)?\?$",
    re.IGNORECASE,
)
_REQUEST = re.compile(
    r"\bplease (?:confirm|advise|clarify|let me know|tell me|choose|decide|specify|review and "
    r"(?:confirm|approve)|approve|provide)\b"
    r"|\blet me know (?:which|what|whether|how|when|where|your|if (?:I|we) should|if you(?:'d| "
    r"would) (?:like|prefer|rather)|if you want me to)\b"
    r"|\bI(?:'ll)? (?:need|require) (?:your|you to|a decision|confirmation|clarification)\b"
    r"|\b(?:awaiting|waiting for|wait for) your\b"
    r"|\bonce you (?:confirm|decide|approve|reply|respond|answer)\b",
    re.IGNORECASE,
)
_ADDRESSES_USER = re.compile(
    r"\b(?:should|shall|may|can|could) (?:I|we)\b"
    r"|\b(?:would|do|did|will) you\b|\bcan you\b|\bcould you\b"
    r"|\b(?:which|what) (?:\w+ ){0,3}(?:do|would|should) (?:you|I|we)\b"
    r"|\bdo you want\b|\bwant me to\b|\bprefer\b",
    re.IGNORECASE,
)
_SETTLED = re.compile(
    r"^(?:I|We|Let's|Let me)\b"
    r"|\bI(?:'ll| will| am going to|'m going to)\b"
    r"|\bI(?:'ve| have)? (?:gone|went|decided|chose|chosen|opted|kept|left|picked|proceeded)\b"
    r"|\b(?:for now|in the meantime|meanwhile|proceeding|going ahead)\b",
    re.IGNORECASE,
)


def find_question(final_text: str) -> str | None:
    """The sentence in which the agent asks the user something, or None."""
    sentences = _tail(final_text)
    if not sentences:
        return None
    last_text, _ = sentences[-1]
    if last_text.endswith("?"):
        return last_text
    prose = [index for index, (_, is_item) in enumerate(sentences) if not is_item]
    if prose and sentences[prose[-1]][0].endswith("?"):
        return sentences[prose[-1]][0]
    for text, _ in reversed(sentences):
        if _REQUEST.search(text):
            return text
    for index, (text, _) in enumerate(sentences):
        later = sentences[index + 1 :]
        if (
            text.endswith("?")
            and _ADDRESSES_USER.search(text)
            and not any(_SETTLED.search(after) for after, _ in later)
        ):
            return text
    return None


def _tail(text: str) -> list[tuple[str, bool]]:
    """The last ``TAIL_SENTENCES`` prose sentences of ``text``, each with "is a list item"."""
    sentences: list[tuple[str, bool]] = []
    for line in _prose_lines(text):
        item = _LIST_ITEM.match(line)
        body = line[item.end() :] if item else line
        for part in _SENTENCE_END.split(body):
            sentence = part.strip()
            if sentence and not _PLEASANTRY.search(sentence):
                sentences.append((sentence, item is not None))
    return sentences[-TAIL_SENTENCES:]


def _prose_lines(text: str) -> list[str]:
    """The lines of ``text`` that are prose, with code, quotes and URLs blanked out."""
    lines: list[str] = []
    fence = ""
    in_status = False
    for raw in text.splitlines():
        opening = _FENCE.match(raw)
        if opening:
            marker = opening.group(1)
            if not fence:
                fence = marker
            elif marker[0] == fence[0] and len(marker) >= len(fence):
                fence = ""
            continue
        stripped = raw.strip()
        if stripped in (START, END):
            in_status = stripped == START
            continue
        if fence or in_status or not stripped or stripped.startswith((">", "#")):
            continue
        prose = _URL.sub(" ", _QUOTED.sub(" ", _INLINE_CODE.sub(" ", stripped))).strip()
        if prose:
            lines.append(prose)
    return lines
