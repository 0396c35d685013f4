"""Properties of marker detection that must hold for any text the agent may write."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from ralphctl.domain.markers import Marker, detect, detect_in_tracker, normalise, parse_marker

# Timing is covered by the pathological cases in test_markers.py; a deadline would only flake.
relaxed = settings(deadline=None, max_examples=300)

#: Pieces that exercise every rule: tags, fences, code, quotes, negations, declarations.
PIECES = [
    "<promise>",
    "</promise>",
    "<!--",
    "-->",
    "```",
    "~~~",
    "`",
    "\n",
    "\r\n",
    " ",
    ".",
    ":",
    '"',
    "'",
    "> ",
    "BLOCKED:",
    "WORKFLOW_BLOCKED:",
    "not ",
    "won't ",
    "when ",
    "COMPLETE",
    "RALPH_DONE",
]
markdownish = st.lists(st.sampled_from(PIECES) | st.text(max_size=6), max_size=30).map("".join)
texts = st.text() | markdownish
unfenced = texts.filter(lambda text: "```" not in text and "~~~" not in text)
untagged = texts.filter(lambda text: "<promise>" not in text)


def is_marker_text(text: str) -> bool:
    try:
        Marker(text, tagged=True)
    except ValueError:
        return False
    return True


marker_texts = (
    (st.sampled_from(["COMPLETE", "ALL TESTS PASS"]) | st.text(min_size=1))
    .map(normalise)
    .filter(is_marker_text)
)
markers = st.builds(Marker, marker_texts, st.booleans())
tagged_markers = st.builds(Marker, marker_texts, st.just(True))


@relaxed
@given(texts, markers, st.none() | texts)
def test_detection_never_raises_and_is_consistent(text, marker, prompt):
    for detection in (detect(text, marker, prompt=prompt), detect_in_tracker(text, marker)):
        assert not (detection.completed and detection.blocked_reason is not None)
        declared = detection.completed or detection.blocked_reason is not None
        assert (detection.evidence is not None) is declared
        if detection.blocked_reason is not None:
            assert detection.blocked_reason == normalise(detection.blocked_reason) != ""


@relaxed
@given(untagged, tagged_markers, st.none() | texts)
def test_without_a_promise_tag_a_tagged_marker_never_completes(text, marker, prompt):
    assert not detect(text, marker, prompt=prompt).completed


@relaxed
@given(unfenced, tagged_markers)
def test_the_tag_on_its_own_last_line_always_completes(text, marker):
    detection = detect(f"{text}\n{marker.signal}", marker)
    assert detection.completed
    assert detection.evidence == marker.signal


@relaxed
@given(
    untagged.filter(lambda text: "```" not in text and "~~~" not in text),
    untagged,
    tagged_markers,
    st.sampled_from(["```", "~~~", "````python", "~~~ text", "  ```"]),
    st.sampled_from(["", "Done: ", "All tests pass. "]),
)
def test_a_tag_in_a_fenced_block_never_completes(before, after, marker, fence, lead):
    text = f"{before}\n{fence}\n{lead}{marker.signal}\n{fence.split()[0]}\n{after}"
    assert not detect(text, marker).completed


@relaxed
@given(texts, markers)
def test_a_tracker_whose_last_line_is_not_the_marker_never_completes(body, marker):
    assert not detect_in_tracker(f"{body}\n_In progress_\n", marker).completed


@relaxed
@given(texts)
def test_normalise_is_idempotent(text):
    assert normalise(normalise(text)) == normalise(text)


@relaxed
@given(marker_texts.flatmap(lambda text: st.sampled_from([text, f" {text}\n", f"\t{text}  "])))
def test_parse_marker_reads_the_tag_content_normalised(text):
    assert parse_marker(f"<promise>{text}</promise>") == Marker(normalise(text), tagged=True)


# -- the seed's <ringmaster> tag: exactly the strictness of <promise> -------------------------

_SWAP = {"promise>": "ringmaster>", "ringmaster>": "promise>"}
_TAG_NAMES = re.compile("promise>|ringmaster>")


def swapped(text: str | None) -> str | None:
    """``text`` with every ``promise>`` and ``ringmaster>`` exchanged (a bijection)."""
    return None if text is None else _TAG_NAMES.sub(lambda found: _SWAP[found[0]], text)


ringmaster_pieces = st.sampled_from(["<ringmaster>", "</ringmaster>", *PIECES])
both_tags = st.lists(ringmaster_pieces | st.text(max_size=6), max_size=30).map("".join)
tag_free_marker_texts = marker_texts.filter(lambda text: not _TAG_NAMES.search(text))


@relaxed
@given(st.text() | both_tags, tag_free_marker_texts, st.none() | both_tags)
def test_a_ringmaster_marker_decides_exactly_as_a_promise_marker_on_the_swapped_text(
    text, marker_text, prompt
):
    ringmaster = Marker(marker_text, tagged=True, tag="ringmaster")
    promised = Marker(marker_text, tagged=True)
    by_ringmaster = detect(text, ringmaster, prompt=prompt)
    by_promise = detect(swapped(text) or "", promised, prompt=swapped(prompt))
    assert by_ringmaster.completed == by_promise.completed
    assert swapped(by_ringmaster.blocked_reason) == by_promise.blocked_reason
    assert swapped(by_ringmaster.evidence) == by_promise.evidence


@relaxed
@given(st.text() | both_tags, tag_free_marker_texts)
def test_a_ringmaster_tracker_decides_exactly_as_a_promise_tracker_on_the_swapped_body(
    body, marker_text
):
    by_ringmaster = detect_in_tracker(body, Marker(marker_text, tagged=True, tag="ringmaster"))
    by_promise = detect_in_tracker(swapped(body) or "", Marker(marker_text, tagged=True))
    assert by_ringmaster.completed == by_promise.completed
    assert swapped(by_ringmaster.evidence) == by_promise.evidence


@relaxed
@given(marker_texts.filter(lambda text: not _TAG_NAMES.search(text)))
def test_parse_marker_reads_a_ringmaster_tag_as_a_tagged_marker(text):
    parsed = parse_marker(f"<ringmaster>{text}</ringmaster>")
    assert parsed == Marker(normalise(text), tagged=True, tag="ringmaster")
    assert parsed.signal == f"<ringmaster>{normalise(text)}</ringmaster>"


@relaxed
@given(unfenced.filter(lambda text: "ringmaster>" not in text), tag_free_marker_texts)
def test_a_promise_tag_never_completes_a_ringmaster_loop(text, marker_text):
    ringmaster = Marker(marker_text, tagged=True, tag="ringmaster")
    assert not detect(f"{text}\n<promise>{marker_text}</promise>", ringmaster).completed
