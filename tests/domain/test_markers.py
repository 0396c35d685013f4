"""Completion and blocked markers: what counts as the agent's declaration, and what does not."""

from __future__ import annotations

import subprocess
import sys

import pytest

from ralphctl.domain.markers import (
    Detection,
    Marker,
    detect,
    detect_in_tracker,
    first_declaration,
    normalise,
    parse_marker,
    promise,
)

DONE = promise("ALL TESTS PASS")
TAG = "<promise>ALL TESTS PASS</promise>"
RALPH_DONE = parse_marker("RALPH_DONE")
WORKFLOW = parse_marker("<!-- WORKFLOW_COMPLETE -->")
NOTHING = Detection(completed=False, blocked_reason=None, evidence=None)


def completed(evidence: str) -> Detection:
    return Detection(completed=True, blocked_reason=None, evidence=evidence)


def blocked(reason: str, evidence: str) -> Detection:
    return Detection(completed=False, blocked_reason=reason, evidence=evidence)


# --- parsing the configured marker ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("signal", "expected"),
    [
        ("<promise>COMPLETE</promise>", Marker("COMPLETE", tagged=True)),
        ("  <promise>\n ALL   TESTS\tPASS \n</promise> ", Marker("ALL TESTS PASS", tagged=True)),
        ("<!-- WORKFLOW_COMPLETE -->", Marker("WORKFLOW_COMPLETE", tagged=False)),
        ("<!--E2E_COMPLETE-->", Marker("E2E_COMPLETE", tagged=False)),
        ("RALPH_DONE", Marker("RALPH_DONE", tagged=False)),
        ("  ALL \n DONE ", Marker("ALL DONE", tagged=False)),
        ("BLOCKED", Marker("BLOCKED", tagged=False)),
    ],
)
def test_parse_marker(signal, expected):
    assert parse_marker(signal) == expected


@pytest.mark.parametrize(
    "signal",
    [
        pytest.param("", id="empty"),
        pytest.param(" \n\t ", id="blank"),
        pytest.param("<promise></promise>", id="empty tag"),
        pytest.param("<promise> \n </promise>", id="blank tag"),
        pytest.param("<!--  -->", id="empty comment"),
        pytest.param("<promise>A</promise><promise>B</promise>", id="two tags"),
        pytest.param("<promise>A <promise>B</promise>", id="nested tag"),
        pytest.param("BLOCKED: waiting", id="reserved for blocked"),
        pytest.param("<promise>BLOCKED:</promise>", id="reserved for blocked, tagged"),
    ],
)
def test_parse_marker_rejects_markers_that_could_never_mean_done(signal):
    with pytest.raises(ValueError, match="marker"):
        parse_marker(signal)


def test_promise_is_always_the_tagged_form():
    assert promise(" ALL  TESTS\nPASS ") == Marker("ALL TESTS PASS", tagged=True)
    assert promise("RALPH_DONE") == Marker("RALPH_DONE", tagged=True)
    assert promise("<promise>COMPLETE</promise>") == Marker("COMPLETE", tagged=True)
    with pytest.raises(ValueError, match="empty"):
        promise("  ")


def test_marker_keeps_its_text_normalised():
    with pytest.raises(ValueError, match="normalised"):
        Marker(" COMPLETE", tagged=True)


def test_signal_is_what_the_agent_prints():
    assert promise("ALL TESTS PASS").signal == TAG
    assert parse_marker("<!-- WORKFLOW_COMPLETE -->").signal == "WORKFLOW_COMPLETE"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", ""),
        ("  a  ", "a"),
        ("a \n\t b", "a b"),
        ("a\u00a0\u2003b\r\nc", "a b c"),
    ],
)
def test_normalise_trims_and_collapses_whitespace(text, expected):
    assert normalise(text) == expected


# --- the official plugin's bugs, one test each ---------------------------------------------------


def test_plugin_bug_untagged_text_equal_to_the_promise_does_not_complete():
    assert detect("ALL TESTS PASS", DONE) == NOTHING


def test_plugin_bug_perl_p_untagged_text_normalised_into_the_promise_does_not_complete():
    # perl -p printed the unmatched message, then collapsed its whitespace into the promise.
    assert detect("ALL\n   TESTS   PASS\n", DONE) == NOTHING
    assert detect("<promise>ALL TESTS PASS", DONE) == NOTHING


def test_plugin_bug_negation_does_not_complete():
    assert detect(f"I will not output {TAG} yet", DONE) == NOTHING


def test_plugin_bug_first_tag_won_now_the_last_valid_tag_is_the_final_word():
    assert detect(f"x {TAG} y <promise>B</promise>", DONE) == NOTHING
    assert detect(f"x <promise>B</promise> y {TAG}", DONE) == completed(TAG)


def test_plugin_behaviour_kept_matching_is_case_sensitive():
    assert detect("<promise>all tests pass</promise>", DONE) == NOTHING


def test_plugin_bug_configured_promise_was_not_normalised():
    marker = promise("ALL  TESTS\nPASS")
    assert detect("<promise>ALL TESTS PASS</promise>", marker).completed
    assert detect("done <promise>  ALL\n  TESTS   PASS </promise> trailing", marker).completed


# --- tagged marker -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        pytest.param(TAG, id="tag alone"),
        pytest.param(f"\n\n  {TAG}  \n\n", id="tag alone, padded"),
        pytest.param(f"All 42 tests pass. {TAG}", id="after a full stop"),
        pytest.param(f"No failures remain. {TAG}", id="negation in the previous sentence"),
        pytest.param(f"Nothing is left to do!\n{TAG}", id="negation on the previous line"),
        pytest.param(f"Status: {TAG}", id="after a colon"),
        pytest.param(f"Everything is done {TAG}", id="same sentence, no negation"),
        pytest.param(f'He said "ship it" {TAG}', id="quotes elsewhere in the sentence"),
        pytest.param(f"{TAG}\nI won't output {TAG} again.", id="a later mention is no retraction"),
        pytest.param(f"{TAG}\n\nThanks for your patience.", id="text after the tag"),
        pytest.param("<promise>ALL\n  TESTS\n  PASS</promise>", id="multi-line content"),
        pytest.param(f"**{TAG}**", id="bold"),
        pytest.param(f"Note: `x` is set.\n{TAG}", id="inline code elsewhere"),
        pytest.param(f"```\ncode\n```\n{TAG}", id="after a closed fence"),
        pytest.param(f"I won't stop before it works. Now it works.\n{TAG}", id="earlier refusal"),
        pytest.param(f"<promise>{TAG}", id="stray opening tag before"),
        pytest.param(f"{TAG}</promise>", id="stray closing tag after"),
        pytest.param(f"Всё готово ✅. {TAG}", id="unicode prose"),
        pytest.param(f"All done.\r\n{TAG}\r\n", id="CRLF"),
    ],
)
def test_a_real_tag_completes(text):
    assert detect(text, DONE).completed


def test_the_evidence_is_the_matched_tag_as_written():
    text = "Done.\n<promise> ALL\n TESTS PASS</promise> "
    assert detect(text, DONE) == completed("<promise> ALL\n TESTS PASS</promise>")


@pytest.mark.parametrize(
    "text",
    [
        pytest.param(f"I will not output {TAG} yet", id="not"),
        pytest.param(f"I can't say {TAG} until the suite is green", id="n't and until"),
        pytest.param(f"I can’t say {TAG} yet", id="typographic apostrophe"),
        pytest.param(f"I cannot emit {TAG}", id="cannot"),
        pytest.param(f"No {TAG} for now", id="no"),
        pytest.param(f"I'll never print {TAG}", id="never"),
        pytest.param(f"Once everything passes I'll output {TAG}", id="once"),
        pytest.param(f"If all stories pass, output {TAG}", id="if (echoed instruction)"),
        pytest.param(f"Output {TAG} when all stories pass.", id="when, after the tag"),
        pytest.param(f"Unless a test fails, {TAG}", id="unless"),
        pytest.param(f"After I fix the last test I will write {TAG}", id="after I"),
        pytest.param(f"Before I write {TAG} I need to run the suite", id="before"),
        pytest.param(f"I won't output <promise>A</promise> or {TAG}", id="two tags, one sentence"),
        pytest.param(f"There are no open tasks {TAG}", id="no, in the same sentence"),
        pytest.param(f"```\n{TAG}\n```", id="backtick fence"),
        pytest.param(f"~~~text\n{TAG}\n~~~", id="tilde fence"),
        pytest.param(f"  ````md\n  {TAG}\n  ````", id="indented long fence"),
        pytest.param(f"```\n{TAG}", id="unclosed fence"),
        pytest.param(f"```\n```` not a closer\n{TAG}", id="closer with text"),
        pytest.param(f"The signal is `{TAG}`.", id="inline code"),
        pytest.param(f"The signal is ` {TAG} `.", id="inline code, spaced"),
        pytest.param(f"`` {TAG} ` ``", id="double-backtick code span"),
        pytest.param(f'Print "{TAG}" at the end', id="double quotes"),
        pytest.param(f"Print '{TAG}'", id="single quotes"),
        pytest.param(f"Print “{TAG}”", id="typographic quotes"),
        pytest.param(f"Print «{TAG}»", id="guillemets"),
        pytest.param(f"> {TAG}", id="markdown blockquote"),
        pytest.param(f"{TAG}\n<promise>NOT YET</promise>", id="a later tag says otherwise"),
        pytest.param("<promise>ALL TESTS</promise> PASS", id="partial content"),
        pytest.param("<promise>ALL TESTS PASS.</promise>", id="extra punctuation"),
        pytest.param("<PROMISE>ALL TESTS PASS</PROMISE>", id="tag name case"),
        pytest.param("< promise>ALL TESTS PASS</promise>", id="malformed tag"),
        pytest.param(f"ALL TESTS PASS\n{TAG.replace('<', '&lt;')}", id="escaped tag"),
    ],
)
def test_a_mention_is_not_a_declaration(text):
    assert detect(text, DONE) == NOTHING


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("", id="empty"),
        pytest.param(" \n\t\r\n ", id="whitespace"),
        pytest.param("\u2028\u00a0", id="unicode whitespace"),
    ],
)
def test_empty_text_declares_nothing(text):
    assert detect(text, DONE) == NOTHING
    assert detect(text, RALPH_DONE) == NOTHING
    assert detect_in_tracker(text, WORKFLOW) == NOTHING


def test_nested_and_unbalanced_tags_pair_each_close_with_the_nearest_open():
    assert detect(f"<promise><promise>{TAG}</promise>", DONE).completed
    assert detect("<promise>ALL TESTS PASS</promise></promise></promise>", DONE).completed
    assert detect("</promise>ALL TESTS PASS<promise>", DONE) == NOTHING
    assert detect("<promise>ALL <promise>TESTS</promise> PASS</promise>", DONE) == NOTHING


# --- echoed prompt -------------------------------------------------------------------------------

PROMPT = f"""Implement the stories in prd.json.
Finish by printing {TAG} on its own line.
The completion signal, alone on the last line:
{TAG}
If you are stuck, end with a line
BLOCKED: <why>
"""
ECHO = f"Finish by printing {TAG} on its own line."


def test_a_line_quoting_the_prompt_is_ignored():
    assert detect(ECHO, DONE).completed
    assert detect(f"You asked:\n{ECHO}", DONE, prompt=PROMPT) == NOTHING


def test_an_echo_is_matched_whitespace_insensitively():
    assert detect(f"  {ECHO.replace(' ', '   ')}  ", DONE, prompt=PROMPT) == NOTHING


def test_the_bare_completion_line_is_never_an_echo():
    # The prompt must be able to show the exact line to print; otherwise nothing could complete.
    assert detect(f"Done.\n{TAG}", DONE, prompt=PROMPT) == completed(TAG)


def test_an_echoed_blocked_template_is_ignored_but_a_real_reason_blocks():
    assert detect("BLOCKED: <why>", DONE, prompt=PROMPT) == NOTHING
    assert detect("BLOCKED: no DB access", DONE, prompt=PROMPT) == blocked(
        "no DB access", "BLOCKED: no DB access"
    )


# --- plain marker --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "marker"),
    [
        pytest.param("Work finished.\nRALPH_DONE", RALPH_DONE, id="last line"),
        pytest.param("Work finished.\n  RALPH_DONE  \n\n", RALPH_DONE, id="padded last line"),
        pytest.param("Work finished.\n<!-- RALPH_DONE -->", RALPH_DONE, id="comment form"),
        pytest.param("x\n<!--WORKFLOW_COMPLETE-->", WORKFLOW, id="comment marker, comment form"),
        pytest.param("x\nWORKFLOW_COMPLETE", WORKFLOW, id="comment marker, bare form"),
        pytest.param("x\nALL   DONE", parse_marker("ALL DONE"), id="spaced marker"),
        pytest.param("RALPH_DONE", RALPH_DONE, id="only line"),
    ],
)
def test_a_plain_marker_completes_as_the_last_non_empty_line(text, marker):
    assert detect(text, marker).completed


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("RALPH_DONE\nI will keep going.", id="earlier line"),
        pytest.param("Print RALPH_DONE when finished", id="inside a sentence"),
        pytest.param("All done: RALPH_DONE", id="same line, with text"),
        pytest.param("`RALPH_DONE`", id="inline code"),
        pytest.param('"RALPH_DONE"', id="quoted"),
        pytest.param("> RALPH_DONE", id="blockquote"),
        pytest.param("ralph_done", id="case"),
        pytest.param("```\nRALPH_DONE", id="inside an unclosed fence"),
        pytest.param("<promise>RALPH_DONE</promise>", id="tagged form"),
        pytest.param("<!-- RALPH_DONE --> ok", id="comment with text"),
    ],
)
def test_a_plain_marker_anywhere_else_does_not_complete(text):
    assert detect(text, RALPH_DONE) == NOTHING


def test_a_plain_marker_shown_in_the_prompt_still_completes():
    prompt = "When you are finished, print this line:\nRALPH_DONE\n"
    assert detect("Finished.\nRALPH_DONE", RALPH_DONE, prompt=prompt).completed


# --- blocked -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param(
            "I tried.\nBLOCKED: no access to the staging DB",
            blocked("no access to the staging DB", "BLOCKED: no access to the staging DB"),
            id="last line",
        ),
        pytest.param(
            "<!-- BLOCKED:   needs   an API key -->",
            blocked("needs an API key", "<!-- BLOCKED:   needs   an API key -->"),
            id="comment form",
        ),
        pytest.param(
            "<!-- WORKFLOW_BLOCKED: no db -->",
            blocked("no db", "<!-- WORKFLOW_BLOCKED: no db -->"),
            id="workflow form",
        ),
        pytest.param(
            "Sorry. <promise>BLOCKED: the spec\n  contradicts itself</promise>\nI stopped.",
            blocked(
                "the spec contradicts itself",
                "<promise>BLOCKED: the spec\n  contradicts itself</promise>",
            ),
            id="tag, multi-line reason",
        ),
        pytest.param(
            "BLOCKED:",
            blocked("no reason given", "BLOCKED:"),
            id="no reason",
        ),
        pytest.param(
            "<promise>BLOCKED :  </promise>",
            blocked("no reason given", "<promise>BLOCKED :  </promise>"),
            id="tag, no reason",
        ),
        pytest.param(
            "BLOCKED: cannot reach the DB, not until VPN works",
            blocked(
                "cannot reach the DB, not until VPN works",
                "BLOCKED: cannot reach the DB, not until VPN works",
            ),
            id="negation words in the reason",
        ),
    ],
)
def test_a_blocked_declaration_carries_its_reason(text, expected):
    assert detect(text, DONE) == expected
    assert detect(text, RALPH_DONE) == expected


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("BLOCKED: no DB\nI will retry.", id="not the last line"),
        pytest.param("Blocked: no DB", id="case"),
        pytest.param("BLOCKED no DB", id="no colon"),
        pytest.param("I am not <promise>BLOCKED: x</promise>", id="negated tag"),
        pytest.param("```\nBLOCKED: x\n```", id="fenced"),
        pytest.param("```\nBLOCKED: x", id="unclosed fence"),
    ],
)
def test_a_blocked_mention_does_not_block(text):
    assert detect(text, DONE) == NOTHING


@pytest.mark.parametrize(
    ("text", "is_completed"),
    [
        pytest.param(f"{TAG}\nBLOCKED: the deploy key expired", False, id="blocked line last"),
        pytest.param(f"BLOCKED: flaky CI\nRetried, green now.\n{TAG}", True, id="tag last"),
        pytest.param(f"<promise>BLOCKED: x</promise> then {TAG}", True, id="two tags, done last"),
        pytest.param(f"{TAG} <promise>BLOCKED: x</promise>", False, id="two tags, blocked last"),
    ],
)
def test_the_declaration_that_comes_last_wins(text, is_completed):
    detection = detect(text, DONE)
    assert detection.completed is is_completed
    assert (detection.blocked_reason is None) is is_completed


def test_plain_marker_and_blocked_tag_last_wins():
    assert detect("<promise>BLOCKED: x</promise>\nRALPH_DONE", RALPH_DONE).completed
    assert detect("RALPH_DONE\n<promise>BLOCKED: x</promise>", RALPH_DONE).blocked_reason == "x"


# --- tracker mode --------------------------------------------------------------------------------

TEMPLATE = """# Loop Progress

When every task is done, make this the last line of the file:
<!-- WORKFLOW_COMPLETE -->
If you cannot go on, end it with <!-- WORKFLOW_BLOCKED: reason -->.

_In progress_
"""


@pytest.mark.parametrize(
    ("body", "marker", "expected"),
    [
        pytest.param(TEMPLATE, WORKFLOW, NOTHING, id="template mentioning the marker"),
        pytest.param(
            TEMPLATE + "\n- [x] all tasks\n\n<!-- WORKFLOW_COMPLETE -->\n",
            WORKFLOW,
            completed("<!-- WORKFLOW_COMPLETE -->"),
            id="comment form",
        ),
        pytest.param("x\nWORKFLOW_COMPLETE", WORKFLOW, completed("WORKFLOW_COMPLETE"), id="bare"),
        pytest.param("x\n<promise>COMPLETE</promise>", promise("COMPLETE"), None, id="tagged"),
        pytest.param("x\nCOMPLETE", promise("COMPLETE"), None, id="tagged marker, bare line"),
        pytest.param(
            "x\n<promise>WORKFLOW_COMPLETE</promise>", WORKFLOW, None, id="plain marker, tag line"
        ),
        pytest.param(
            TEMPLATE + "<!-- WORKFLOW_BLOCKED: waiting for review -->",
            WORKFLOW,
            blocked("waiting for review", "<!-- WORKFLOW_BLOCKED: waiting for review -->"),
            id="blocked",
        ),
        pytest.param("x\n<promise>BLOCKED: y</promise>", WORKFLOW, None, id="blocked tag"),
        pytest.param("<!-- WORKFLOW_COMPLETE -->\n- [ ] task", WORKFLOW, NOTHING, id="not last"),
        pytest.param("```\n<!-- WORKFLOW_COMPLETE -->", WORKFLOW, NOTHING, id="unclosed fence"),
        pytest.param(
            "x\n<promise>A</promise> <promise>COMPLETE</promise>",
            promise("COMPLETE"),
            NOTHING,
            id="two tags on the line",
        ),
    ],
)
def test_tracker_counts_only_the_last_non_empty_line(body, marker, expected):
    detection = detect_in_tracker(body, marker)
    if expected is None:
        assert detection.completed or detection.blocked_reason
    else:
        assert detection == expected


# --- robustness ----------------------------------------------------------------------------------


def test_a_huge_text_is_read_in_one_pass():
    text = "All good, no issues if any. " * 200_000 + "\n" + TAG
    assert len(text) > 5_000_000
    assert detect(text, DONE, prompt=text[:100_000]) == completed(TAG)
    assert detect_in_tracker(text, DONE) == completed(TAG)


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("<promise>" * 100_000, id="openings"),
        pytest.param("</promise>" * 100_000, id="closings"),
        pytest.param("<promise></promise>" * 100_000, id="empty tags"),
        pytest.param("I won't " + f"{TAG} " * 100_000, id="negated tags"),
        pytest.param("`" * 1_000_000 + TAG, id="backticks"),
        pytest.param(" ".join("`" * n for n in range(1, 2_000)) + TAG, id="backtick runs"),
        pytest.param("```\n" * 100_001 + TAG, id="fences"),
        pytest.param("<!--" * 500_000, id="comment openings"),
        pytest.param("\n" * 2_000_000 + "x" + " " * 2_000_000, id="blank lines"),
        pytest.param("<promise>" + "a\n " * 1_000_000 + "</promise>", id="huge tag"),
    ],
)
def test_pathological_inputs_finish(text):
    detection = detect(text, DONE, prompt=text[:10_000])
    assert not detection.completed
    assert detect_in_tracker(text, DONE) == NOTHING


def test_importing_the_markers_loads_only_the_stdlib_and_not_dataclasses():
    # The Stop hook imports this module on every agent stop.
    probe = (
        "import sys; before = set(sys.modules); import ralphctl.domain.markers; "
        "print('\\n'.join(sorted(set(sys.modules) - before)))"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    ).stdout.split()
    foreign = [
        name
        for name in loaded
        if name.split(".")[0] not in sys.stdlib_module_names
        and name
        not in {"ralphctl", "ralphctl.domain", "ralphctl.domain.markers", "ralphctl.domain.value"}
    ]
    assert foreign == []
    assert "dataclasses" not in loaded  # about 20 ms the Stop hook would pay (domain/value.py)


# -- the seed's <ringmaster> tag -------------------------------------------------------------

RINGMASTER = parse_marker("<ringmaster>COMPLETE</ringmaster>")


@pytest.mark.parametrize(
    ("text", "completed", "blocked"),
    [
        ("All green.\n<ringmaster>COMPLETE</ringmaster>", True, None),
        ("I will not print <ringmaster>COMPLETE</ringmaster> yet", False, None),
        ("The signal is `<ringmaster>COMPLETE</ringmaster>`.", False, None),
        ("<promise>COMPLETE</promise>", False, None),
        ("COMPLETE", False, None),
        ("<ringmaster>BLOCKED: no key</ringmaster>", False, "no key"),
        ("BLOCKED: no key", False, "no key"),
    ],
)
def test_a_ringmaster_marker_is_read_by_the_promise_rules(text, completed, blocked):
    detection = detect(text, RINGMASTER)
    assert (detection.completed, detection.blocked_reason) == (completed, blocked)


def test_a_ringmaster_signal_keeps_its_spelling():
    assert RINGMASTER.signal == "<ringmaster>COMPLETE</ringmaster>"
    assert RINGMASTER.blocked_signal == "<ringmaster>BLOCKED: <the reason></ringmaster>"


def test_a_marker_cannot_hold_either_tag():
    with pytest.raises(ValueError, match="cannot contain a <promise> or <ringmaster> tag"):
        parse_marker("<promise>x <ringmaster>y</ringmaster></promise>")


# -- final text first, then the tracker (both loop modes) ----------------------------------


def test_the_final_text_decides_before_the_tracker():
    final = detect("BLOCKED: the key expired", RALPH_DONE)
    tracker = detect_in_tracker("- [x] all\nRALPH_DONE", RALPH_DONE)
    assert first_declaration(final, tracker) == final


def test_without_a_declaration_in_the_final_text_the_trackers_last_line_decides():
    final = detect("Worked on it.", RALPH_DONE)
    tracker = detect_in_tracker("- [x] all\nRALPH_DONE", RALPH_DONE)
    assert first_declaration(final, tracker).completed
    assert first_declaration(final, None) == final
