"""Usage limits: structured signals first, then the CLI's messages, with their reset times.

Tool output never reaches ``final_text`` (the parser keeps only the agent's final assistant or
result text), so a file that mentions a limit cannot park a loop: that guarantee is the
caller's, and is tested with the parser at the end of this file.
"""

from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ralphctl.domain.model import IterationResult, RateLimitInfo
from ralphctl.domain.usage_limits import (
    DEFAULT_WAIT_S,
    LimitSource,
    UsageLimit,
    detect_usage_limit,
    usage_warning,
)
from tests.agents.streams import REAL_CLI_CASSETTES, cassette_lines, exited, replay_lines
from tests.realcli.harness import OLDEST_VERSION

#: Saturday 2026-11-21 12:00 UTC: 21:00 in Tokyo, 04:00 in Los Angeles, 06:00 in Chicago.
NOW = datetime(2026, 11, 21, 12, 0, tzinfo=UTC).timestamp()


def at(zone: str, year: int, month: int, day: int, hour: int, minute: int) -> float:
    return datetime(year, month, day, hour, minute, tzinfo=ZoneInfo(zone)).timestamp()


def said(text: str, *, is_error: bool = True, **fields: object) -> IterationResult:
    return IterationResult(final_text=text, is_error=is_error, **fields)  # type: ignore[arg-type]


# --- the CLI's messages -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "resets_at"),
    [
        pytest.param(
            "You've hit your session limit · resets 3:50pm (Asia/Tokyo)",
            at("Asia/Tokyo", 2026, 11, 22, 15, 50),
            id="today's time has passed: tomorrow",
        ),
        pytest.param(
            "You've hit your limit · resets 1pm (Europe/Lisbon)",
            at("Europe/Lisbon", 2026, 11, 21, 13, 0),
            id="later today",
        ),
        pytest.param(
            "You've hit your limit · resets 11pm (America/Anchorage)",
            at("America/Anchorage", 2026, 11, 21, 23, 0),
            id="the zone's date, not UTC's",
        ),
        pytest.param(
            "You’ve hit your weekly limit · resets 4am (Europe/Madrid)",
            at("Europe/Madrid", 2026, 11, 22, 4, 0),
            id="typographic apostrophe",
        ),
        pytest.param(
            "You've hit your weekly limit · resets Jul 31, 2am (UTC)",
            at("UTC", 2027, 7, 31, 2, 0),
            id="a date that has passed this year: next year",
        ),
        pytest.param(
            "You've hit your limit · resets Dec 1 at 9am (America/New_York)",
            at("America/New_York", 2026, 12, 1, 9, 0),
            id="a date later this year",
        ),
        pytest.param(
            "You've hit your weekly limit · resets Jul 27 at 4:30am (Asia/Calcutta)",
            at("Asia/Kolkata", 2027, 7, 27, 4, 30),
            id="legacy zone name",
        ),
        pytest.param(
            "You've hit your weekly limit · resets Sep 15 at 7pm",
            at("UTC", 2027, 9, 15, 19, 0),
            id="no zone: the local zone",
        ),
        pytest.param(
            "Claude usage limit reached. Your limit will reset at 9am (America/Chicago).",
            at("America/Chicago", 2026, 11, 21, 9, 0),
            id="CLI 1.0 wording",
        ),
        pytest.param(
            "You’ve hit your limit for Claude messages. Limits will reset at 9:30 AM.",
            at("UTC", 2026, 11, 21, 9, 30) + 86_400,
            id="claude.ai wording, upper-case AM",
        ),
        pytest.param(
            "You've hit your limit · resets 13:30",
            at("UTC", 2026, 11, 21, 13, 30),
            id="24-hour clock",
        ),
        pytest.param(
            "You've hit your limit · resets 12am (UTC)",
            at("UTC", 2026, 11, 22, 0, 0),
            id="midnight",
        ),
        pytest.param(
            f"Claude AI usage limit reached|{int(NOW) + 7200}", NOW + 7200, id="epoch form"
        ),
    ],
)
def test_the_reset_time_is_read_from_the_message(text, resets_at):
    limit = detect_usage_limit(said(text, is_error=False), NOW)
    assert limit == UsageLimit(resets_at, True, LimitSource.TEXT, text)


def test_a_time_without_a_zone_is_read_in_the_local_zone():
    la = ZoneInfo("America/Los_Angeles")
    limit = detect_usage_limit(said("You're out of extra usage · resets 9pm"), NOW, local_zone=la)
    assert limit is not None
    assert limit.resets_at == at("America/Los_Angeles", 2026, 11, 21, 21, 0)


@pytest.mark.parametrize(
    "text",
    [
        "You've hit your limit",
        "You're out of extra usage",
        "You've hit your limit · resets 5",
        "You've hit your limit · resets 25:00",
        "You've hit your limit · resets 13pm (UTC)",
        "You've hit your limit · resets Feb 30 at 1pm (UTC)",
        f"Claude AI usage limit reached|{int(NOW) - 60}",
    ],
    ids=["no time", "extra usage", "bare number", "bad hour", "13pm", "bad date", "stale epoch"],
)
def test_without_a_usable_reset_time_the_default_wait_applies(text):
    limit = detect_usage_limit(said(text), NOW)
    assert limit is not None
    assert limit.source is LimitSource.TEXT
    assert not limit.reset_known
    assert limit.resets_at == NOW + DEFAULT_WAIT_S
    shorter = detect_usage_limit(said(text), NOW, default_wait_s=60)
    assert shorter is not None
    assert shorter.resets_at == NOW + 60


def test_an_unknown_zone_falls_back_to_the_local_zone():
    limit = detect_usage_limit(said("You've hit your limit · resets 3pm (Mars/Olympus)"), NOW)
    assert limit is not None
    assert limit.resets_at == at("UTC", 2026, 11, 21, 15, 0)


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("Done: all tests pass.", id="an ordinary answer"),
        pytest.param(
            "I documented the limits.\nThe CLI prints: You've hit your limit · resets 3pm\n"
            "It also has a weekly window.\nNext I will add retries.",
            id="a long answer that mentions the message before its last line",
        ),
        pytest.param("The context limit reached its maximum.", id="not a usage limit"),
        pytest.param("", id="no text"),
    ],
)
def test_text_without_a_limit_message_where_one_may_stand_is_no_limit(text):
    assert detect_usage_limit(said(text, is_error=False), NOW) is None


def test_a_short_text_may_carry_the_message_on_any_line():
    text = "5-hour limit reached ∙ resets 1pm (UTC)\n/upgrade to increase your usage limit."
    limit = detect_usage_limit(said(text), NOW)
    assert limit is not None
    assert limit.resets_at == at("UTC", 2026, 11, 21, 13, 0)
    assert limit.raw == "5-hour limit reached ∙ resets 1pm (UTC)"


# --- structured signals -------------------------------------------------------------------

REJECTED = RateLimitInfo("rejected", NOW + 3600, "five_hour")


@pytest.mark.parametrize(
    ("result", "expected"),
    [
        pytest.param(
            said("", rate_limit=REJECTED),
            UsageLimit(
                NOW + 3600,
                True,
                LimitSource.RATE_LIMIT_EVENT,
                "rate limit rejected (five_hour)",
                "five_hour",
            ),
            id="rejected event with resetsAt",
        ),
        pytest.param(
            said(
                "You've hit your session limit · resets 3:50pm (Asia/Tokyo)",
                rate_limit=RateLimitInfo("rejected", None, "five_hour"),
            ),
            UsageLimit(
                at("Asia/Tokyo", 2026, 11, 22, 15, 50),
                True,
                LimitSource.RATE_LIMIT_EVENT,
                "You've hit your session limit · resets 3:50pm (Asia/Tokyo)",
                "five_hour",
            ),
            id="rejected event without resetsAt: the text's time",
        ),
        pytest.param(
            said("", rate_limit=RateLimitInfo("rejected", NOW - 10, None)),
            UsageLimit(
                NOW + DEFAULT_WAIT_S,
                False,
                LimitSource.RATE_LIMIT_EVENT,
                "rate limit rejected (unknown window)",
            ),
            id="stale resetsAt: the default wait",
        ),
        pytest.param(
            said(
                "API Error: Request rejected (429) · This request would exceed your rate limit",
                assistant_error="rate_limit",
                api_error_status=429,
            ),
            UsageLimit(
                NOW + DEFAULT_WAIT_S,
                False,
                LimitSource.ASSISTANT_ERROR,
                "API Error: Request rejected (429) · This request would exceed your rate limit",
            ),
            id="assistant error rate_limit",
        ),
        pytest.param(
            said("", api_error_status=429),
            UsageLimit(NOW + DEFAULT_WAIT_S, False, LimitSource.HTTP_429, "HTTP status 429"),
            id="is_error with status 429",
        ),
        pytest.param(
            said("x", api_error_status=429, rate_limit=REJECTED, assistant_error="rate_limit"),
            UsageLimit(
                NOW + 3600,
                True,
                LimitSource.RATE_LIMIT_EVENT,
                "rate limit rejected (five_hour)",
                "five_hour",
            ),
            id="the strongest signal wins",
        ),
    ],
)
def test_structured_signals_come_first(result, expected):
    assert detect_usage_limit(result, NOW) == expected


@pytest.mark.parametrize(
    "result",
    [
        pytest.param(said("done", is_error=False, rate_limit=REJECTED), id="rejected, run went on"),
        pytest.param(said("done", is_error=False, assistant_error="rate_limit"), id="no failure"),
        pytest.param(said("done", is_error=False, api_error_status=429), id="429 but success"),
        pytest.param(
            said(
                "API Error: 529 Overloaded.", api_error_status=529, assistant_error="server_error"
            ),
            id="overloaded is an error, not a limit",
        ),
        pytest.param(
            said("ok", is_error=False, rate_limit=RateLimitInfo("allowed_warning", NOW + 60)),
            id="allowed_warning",
        ),
    ],
)
def test_other_signals_are_no_limit(result):
    assert detect_usage_limit(result, NOW) is None


def test_allowed_warning_is_a_separate_warning_signal():
    warning = RateLimitInfo("allowed_warning", NOW + 60, "seven_day")
    assert usage_warning(said("ok", is_error=False, rate_limit=warning)) == warning
    assert usage_warning(said("ok", rate_limit=REJECTED)) is None
    assert usage_warning(said("ok")) is None


def test_wait_s_counts_down_to_the_reset_and_never_below_zero():
    limit = UsageLimit(NOW + 90, True, LimitSource.TEXT, "")
    assert (limit.wait_s(NOW), limit.wait_s(NOW + 90), limit.wait_s(NOW + 1000)) == (90, 0, 0)


pieces = st.sampled_from(
    [
        "You've hit your ",
        "weekly ",
        "limit",
        " · resets ",
        "usage limit reached|",
        "out of extra usage",
        "Jul 31, ",
        "Feb 29 at ",
        "3:50",
        "12",
        "99",
        "pm",
        "am",
        " (",
        ")",
        "Asia/Tokyo",
        "../../etc/passwd",
        "\n",
        "1795262400",
        "99999999999",
    ]
)
texts = st.lists(pieces | st.text(max_size=5), max_size=20).map("".join) | st.text()


@settings(deadline=None, max_examples=300)
@given(texts, st.booleans(), st.sampled_from([None, 429, 529]))
def test_never_raises_and_never_resets_in_the_past(text, is_error, status):
    result = said(text, is_error=is_error, api_error_status=status)
    limit = detect_usage_limit(result, NOW)
    assert limit is None or limit.resets_at > NOW


# --- through the Claude parser ------------------------------------------------------------


def test_a_rejected_stream_from_the_parser_is_a_usage_limit():
    _, result = replay_lines(cassette_lines("rate_limited"), exited(1))
    now = 1788436200.0 - 3600
    limit = detect_usage_limit(result, now)
    assert limit is not None
    assert result.assistant_error == "rate_limit"
    assert (limit.source, limit.resets_at, limit.limit_type) == (
        LimitSource.RATE_LIMIT_EVENT,
        1788436200.0,
        "five_hour",
    )
    assert limit.raw == "You've hit your session limit · resets 3:50pm"


def test_the_real_cli_429_is_a_usage_limit_with_the_default_wait():
    lines = (REAL_CLI_CASSETTES / "rate_limited_429.jsonl").read_bytes().splitlines()
    _, result = replay_lines(lines, exited(1))
    limit = detect_usage_limit(result, NOW)
    assert limit is not None
    assert limit.source is LimitSource.ASSISTANT_ERROR
    assert not limit.reset_known


def test_tool_output_that_mentions_a_limit_never_reaches_the_detector():
    lines = [
        b'{"type":"assistant","message":{"id":"m1","content":[{"type":"tool_use","id":"t1",'
        b'"name":"Read","input":{"file_path":"notes.md"}}]},"parent_tool_use_id":null}',
        b'{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t1",'
        b'"content":"You\'ve hit your limit \xc2\xb7 resets 3pm (UTC)"}]},'
        b'"parent_tool_use_id":null}',
        b'{"type":"result","subtype":"success","is_error":false,"result":"Read the notes.",'
        b'"total_cost_usd":0.01}',
    ]
    _, result = replay_lines(lines)
    assert result.final_text == "Read the notes."
    assert detect_usage_limit(result, NOW) is None


def test_the_oldest_supported_clis_429_is_a_usage_limit_though_it_names_no_status():
    # The oldest supported CLI: assistant error "unknown", no api_error_status, only the text.
    lines = (
        REAL_CLI_CASSETTES / f"claude-{OLDEST_VERSION}" / "rate_limited_429.jsonl"
    ).read_bytes()
    _, result = replay_lines(lines.splitlines(), exited(1))
    limit = detect_usage_limit(result, NOW)
    assert limit is not None
    assert not limit.reset_known
    assert "rate_limit_error" in limit.raw


@pytest.mark.parametrize(
    "text",
    [
        'API Error: 429 {"type":"error","error":{"type":"rate_limit_error","message":"slow"}}',
        "API Error: Request rejected (429) · This request would exceed your rate limit",
        "API Error: Rate limit reached",
    ],
)
def test_a_failed_run_whose_final_text_reports_a_429_is_a_limit_whatever_the_error_says(text):
    limit = detect_usage_limit(said(text, assistant_error="unknown"), NOW)
    assert limit is not None
    assert limit.source is LimitSource.HTTP_429
    assert limit.raw == text


@pytest.mark.parametrize(
    "result",
    [
        pytest.param(
            said(
                'API Error: 429 {"type":"error","error":{"type":"rate_limit_error"}}',
                is_error=False,
            ),
            id="a successful run quoting the error",
        ),
        pytest.param(
            said('API Error: 529 {"type":"error","error":{"type":"overloaded_error"}}'),
            id="overloaded",
        ),
        pytest.param(
            said("API Error: 429 happened earlier.\n" + "More work.\n" * 4),
            id="not where the CLI's message stands",
        ),
    ],
)
def test_an_api_error_text_is_a_limit_only_for_a_failed_run_and_only_for_429(result):
    assert detect_usage_limit(result, NOW) is None
