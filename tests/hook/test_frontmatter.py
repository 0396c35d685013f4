"""The tracker frontmatter: what we write reads back exactly; what we cannot read is refused."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ralphctl.hook.frontmatter import FrontmatterError, parse, render

OFFICIAL_STATE = """---
active: true
iteration: 1
session_id:
max_iterations: 0
completion_promise: "DONE"
started_at: "2026-11-21T22:16:46Z"
---

Fix the bug
"""

keys = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,20}", fullmatch=True)
scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text()
)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(keys, scalars, max_size=12), st.text())
def test_what_we_write_reads_back_exactly(fields, body):
    parsed, parsed_body = parse(render(fields, body))
    assert parsed_body == body
    assert parsed.keys() == fields.keys()
    for key, value in fields.items():
        assert type(parsed[key]) is type(value)
        assert parsed[key] == value


def test_strings_are_always_quoted_so_they_never_turn_into_other_types():
    text = render({"a": "true", "b": "12", "c": "null", "d": "", "e": 'say "hi"\n'}, "")
    assert parse(text)[0] == {"a": "true", "b": "12", "c": "null", "d": "", "e": 'say "hi"\n'}
    assert 'e: "say \\"hi\\"\\n"' in text


def test_the_official_plugins_state_file_is_read_as_it_means_it():
    fields, body = parse(OFFICIAL_STATE)
    assert fields == {
        "active": True,
        "iteration": 1,
        "session_id": None,
        "max_iterations": 0,
        "completion_promise": "DONE",
        "started_at": "2026-11-21T22:16:46Z",
    }
    assert body == "\nFix the bug\n"


def test_plain_unquoted_strings_and_null_are_read():
    fields, _ = parse("---\nsession_id: abc-123\ncompletion_promise: null\nx: 1.5\n---\n")
    assert fields == {"session_id": "abc-123", "completion_promise": None, "x": 1.5}


def test_verbatim_quotes_read_unescaped_values_as_the_plugins_shell_script_does():
    text = '---\ncompletion_promise: "say "hi" C:\\path"\n---\n'
    with pytest.raises(FrontmatterError):
        parse(text)
    assert parse(text, verbatim_quotes=True)[0] == {"completion_promise": 'say "hi" C:\\path'}


def test_a_body_with_its_own_dashes_lines_is_kept_whole():
    fields, body = parse("---\na: 1\n---\nintro\n---\nmore\n")
    assert (fields, body) == ({"a": 1}, "intro\n---\nmore\n")


@pytest.mark.parametrize(
    "text",
    [
        "",
        "no frontmatter\n",
        "---\na: 1\n",  # never closed
        "---\n  a: 1\n---\n",  # nested
        "---\na:\n  - 1\n---\n",  # a list
        "---\na: [1, 2]\n---\n",
        "---\na: {b: 1}\n---\n",
        "---\na: |\n---\n",
        "---\na: &anchor 1\n---\n",
        "---\na: 1 # comment\n---\n",
        "---\na: b: c\n---\n",
        "---\na: 1\na: 2\n---\n",  # duplicate
        "---\na:1\n---\n",  # no space after the colon
        '---\na: "unterminated\n---\n',
        '---\na: "bad \\q escape"\n---\n',
        '---\na: "inner " quote"\n---\n',
        "---\na: 'it's'\n---\n",
        "---\na: 1e999\n---\n",
        "---\nnot a key value line\n---\n",
    ],
)
def test_anything_outside_the_subset_is_refused(text):
    with pytest.raises(FrontmatterError):
        parse(text)


def test_comments_blank_lines_and_crlf_are_tolerated():
    fields, body = parse("---\r\n# note\r\n\r\na: 1\r\n---\r\nbody\r\n")
    assert fields == {"a": 1}
    assert body == "body\r\n"


def test_render_refuses_what_it_could_not_read_back():
    with pytest.raises(ValueError, match="key"):
        render({"not a key": 1}, "")
    with pytest.raises(ValueError, match="non-finite"):
        render({"a": math.inf}, "")
