import pytest

from ralphctl.domain.config import ConfigInvalid, LoopConfig
from ralphctl.domain.numbers import parse_duration


def test_defaults_are_the_seed_defaults():
    config = LoopConfig()
    assert config.max_iterations == 100
    assert config.max_runtime == 4 * 3600
    assert config.max_cost_usd == 300
    assert config.max_tokens is None
    assert config.checkpoint_interval == 5
    assert config.cooldown == 5
    assert config.completion_signal == "<promise>COMPLETE</promise>"
    assert config.circuit_breaker_threshold == 5
    assert config.permission_mode == "acceptEdits"


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("90", 90), ("45s", 45), ("30m", 1800), ("4h", 14400), ("1h30m", 5400), ("250ms", 0.25)],
)
def test_durations_accept_seconds_and_units(text, seconds):
    assert parse_duration(text) == pytest.approx(seconds)
    assert LoopConfig(max_runtime=text).max_runtime == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["", "soon", "4 hours", "1h-5m", "h"])
def test_bad_durations_say_what_a_duration_is(text):
    with pytest.raises(ConfigInvalid, match="is not a duration"):
        LoopConfig(max_runtime=text)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("max_iterations", 0),
        ("max_iterations", -3),
        ("max_cost_usd", 0),
        ("max_tokens", 0),
        ("circuit_breaker_threshold", 0),
        ("checkpoint_interval", -1),
        ("cooldown", "-5"),
        ("completion_signal", "   "),
        ("permission_mode", "yolo"),
    ],
)
def test_invalid_values_are_refused(field, value):
    with pytest.raises(ConfigInvalid):
        LoopConfig(**{field: value})


def test_unknown_settings_are_errors_not_silently_ignored():
    with pytest.raises(ConfigInvalid, match="max_iteration: unknown setting; known: max_iter"):
        LoopConfig.from_mapping({"max_iteration": 3})


def test_every_invalid_field_is_reported_at_once():
    with pytest.raises(ConfigInvalid) as caught:
        LoopConfig(max_iterations=0, cooldown="soon", agent_args="--model x")  # type: ignore[arg-type]
    assert set(caught.value.errors) == {"max_iterations", "cooldown", "agent_args"}


def test_booleans_are_not_numbers():
    with pytest.raises(ConfigInvalid, match="max_iterations"):
        LoopConfig(max_iterations=True)


def test_it_round_trips_through_json():
    config = LoopConfig(max_runtime="90m", agent_args=("--model", "sonnet"))  # type: ignore[arg-type]
    assert LoopConfig.from_mapping(config.to_json()) == config


def test_budgets_carry_every_limit():
    config = LoopConfig(max_iterations=7, max_tokens=1000, circuit_breaker_threshold=2)
    budgets = config.budgets
    assert budgets.max_iterations == 7
    assert budgets.max_tokens == 1000
    assert budgets.max_cost_usd == 300
    assert budgets.max_consecutive_errors is None  # the circuit breaker counts errors
    assert config.breaker.max_consecutive_errors == 2


def test_the_marker_is_parsed_from_the_signal():
    assert LoopConfig().marker.tagged
    assert LoopConfig().marker.text == "COMPLETE"
    plain = LoopConfig(completion_signal="RALPH_DONE").marker
    assert not plain.tagged


def test_breaker_thresholds_can_be_turned_off_with_false():
    config = LoopConfig.from_mapping({"no_progress_threshold": False, "same_error_threshold": 2})
    assert config.breaker.no_progress_threshold is None
    assert config.breaker.same_error_threshold == 2
    with pytest.raises(ConfigInvalid, match="no_progress_threshold"):
        LoopConfig(no_progress_threshold=0)
