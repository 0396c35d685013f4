"""Reading the user's agent arguments: the flags given, and a flag's value."""

from __future__ import annotations

from ralphctl.agents.argv import given_flags, option_value


def test_a_flag_given_with_equals_counts_by_its_name_and_values_are_not_flags() -> None:
    assert given_flags(["--model=x", "-m", "gpt", "--yolo", "plain"]) == {"--model", "-m", "--yolo"}


def test_a_value_is_read_after_equals_or_as_the_next_argument() -> None:
    assert option_value(["--format=json"], "--format") == "json"
    assert option_value(["--format", "json"], "--format") == "json"
    assert option_value(["-o", "text"], "--output-format", "-o") == "text"


def test_a_flag_followed_by_a_flag_or_nothing_has_no_value() -> None:
    assert option_value(["--format", "--verbose"], "--format") is None
    assert option_value(["--format"], "--format") is None
    assert option_value(["--formats=x"], "--format") is None
