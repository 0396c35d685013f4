"""Properties of marker detection that must hold for any text the agent may write."""

from __future__ import annotations

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
