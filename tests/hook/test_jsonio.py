"""``hook.jsonio`` answers exactly as ``json`` does, without importing it."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from collections.abc import Callable

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ralphctl.hook.jsonio import dumps, loads

documents = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


@given(documents, st.sampled_from([None, 2]), st.booleans())
def test_loads_reads_what_json_writes(document, indent, ascii_only):
    text = json.dumps(document, indent=indent, ensure_ascii=ascii_only)
    assert loads(text) == json.loads(text)
    assert loads(f" \n{text}\t\r\n".encode()) == json.loads(text)


def outcome(parse: Callable[[str], object], text: str) -> str:
    """What ``parse`` makes of ``text``: a repr (NaN is never equal to itself), or "refused"."""
    try:
        return repr(parse(text))
    except ValueError:
        return "refused"


@given(st.text(max_size=40) | st.binary(max_size=40).map(lambda b: b.decode("latin-1")))
def test_loads_refuses_exactly_what_json_refuses(text):
    assert outcome(loads, text) == outcome(json.loads, text)


@pytest.mark.parametrize(
    "text", ["", "   ", "{", '{"a": 1} {"b": 2}', '{"a": 1},', "nul", "\ufeff{}", "[1,]"]
)
def test_loads_raises_value_error_for_what_is_not_one_document(text):
    assert outcome(loads, text) == "refused"


def test_loads_refuses_bytes_that_are_not_utf_8():
    with pytest.raises(UnicodeDecodeError):
        loads(b'{"a": "\xff"}')


def test_loads_accepts_json_constants_like_json_does():
    assert math.isnan(loads("NaN"))  # type: ignore[arg-type]
    assert loads("[Infinity, -Infinity]") == [math.inf, -math.inf]


@given(st.dictionaries(st.text(), st.text(), max_size=5))
def test_dumps_writes_what_json_dumps_writes(document):
    assert dumps(document) == json.dumps(document)


@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
        lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
        max_leaves=20,
    )
)
def test_dumps_writes_any_document_as_json_dumps_does(document):
    assert dumps(document) == json.dumps(document)


@pytest.mark.parametrize("document", [{1: "a"}, {"a": object()}, {"a": {1, 2}}, b"bytes"])
def test_dumps_refuses_what_is_not_json(document):
    with pytest.raises(TypeError):
        dumps(document)


def test_importing_it_does_not_import_json_or_re():
    probe = (
        "import sys, ralphctl.hook.jsonio as j; j.loads(b'{\"a\": [1, 2.5, null]}'); "
        "j.dumps({'a': 'b'}); print(sorted({'json', 're', 'enum'} & set(sys.modules)))"
    )
    done = subprocess.run(
        [sys.executable, "-I", "-c", probe], capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == "[]", done.stderr
