"""One variable switches every reliability test between its bounded and its longer run."""

from __future__ import annotations

import pytest

from tests.reliability.scale import ENV, scaled


def test_make_test_gets_the_bounded_count(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.delenv(ENV, raising=False)
    assert scaled(20, 200) == 20


def test_make_reliability_gets_the_long_count(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv(ENV, "long")
    assert scaled(20, 200) == 200


def test_a_misspelt_setting_is_refused_rather_than_run_short(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv(ENV, "LONG")
    with pytest.raises(ValueError, match="RALPHCTL_RELIABILITY='LONG'"):
        scaled(20, 200)
