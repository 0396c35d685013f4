"""Error sentences of CLIs that report no HTTP status (Amp, Cursor), read as a status and an
error category."""

from __future__ import annotations

import pytest

from ralphctl.agents.error_text import ErrorKind, error_kind

AUTH = ErrorKind(401, "authentication_failed")
BILLING = ErrorKind(402, "billing_error")
RATE = ErrorKind(429, "rate_limit")
OVERLOADED = ErrorKind(529, "overloaded")
BAD_REQUEST = ErrorKind(400, "invalid_request")


@pytest.mark.parametrize(
    ("message", "kind"),
    [
        ("Error: Invalid or missing API key. Run 'amp login' to authenticate.", AUTH),
        ("Unauthorized The API key was revoked.", AUTH),
        ("Error: Authentication required. Please run 'cursor-agent login' first", AUTH),
        ("Out of Credits Add credits to keep using Amp.", BILLING),
        ('{"ok": false, "error": {"code": "insufficient-credits"}}', BILLING),
        ("Rate Limit Hit Rate limit exceeded. Try again shortly.", RATE),
        ('429 {"type":"error","error":{"type":"rate_limit_error"}}', RATE),
        ("Usage Quota Exceeded You've exceeded your usage quota of $20.", RATE),
        ("You've hit your usage limit. Get more usage with a paid plan.", RATE),
        ("Model Provider Overloaded Try again in a few seconds.", OVERLOADED),
        ("503 Service Unavailable", OVERLOADED),
        (
            "Context Limit Reached This conversation has reached the context window limit.",
            BAD_REQUEST,
        ),
        ("prompt is too long: 210000 tokens > 200000 maximum", BAD_REQUEST),
    ],
)
def test_known_sentences_are_read(message: str, kind: ErrorKind) -> None:
    assert error_kind(message) == kind


@pytest.mark.parametrize(
    "message",
    [
        "",
        "Error: API request for getUserInfo failed: 404",
        "Network Error Cannot reach Amp servers.",
    ],
)
def test_other_sentences_state_nothing(message: str) -> None:
    assert error_kind(message) is None


def test_credits_win_over_the_free_usage_they_mention() -> None:
    message = "Out of Credits Add credits, or wait until the next hour starts for more free usage."

    assert error_kind(message) == BILLING
