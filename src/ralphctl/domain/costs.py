"""What an iteration cost: the agent's reported cost, else its tokens priced from a table.

Claude Code reports a cost (``cost_source = reported``). For an agent that reports only tokens,
each model's tokens are priced per million from ``DEFAULT_PRICES`` or the user's
``[loops.costs]`` overrides (``estimated``). A model with no price gives no cost at all (a
partial sum would look complete): ``Cost.unpriced`` names it so the caller can warn once.

Models are matched by name prefix, the longest listed prefix winning and ending at a
separator (``claude-opus-4`` prices ``claude-opus-4-20250514`` but not ``claude-opus-40``).
Names are compared in lower case, with a dot between two digits read as a hyphen
(``gpt-5.1`` is ``gpt-5-1``, ``claude-opus-4.5`` is ``claude-opus-4-5``), with provider
prefixes (``us.anthropic.``, ``anthropic/``, ``openai/``, ``google/``, ``models/``,
``openrouter/openai/``) and context suffixes (``[1m]``) dropped, so ``claude-opus-5[1m]`` is
priced as ``claude-opus-5``. A newer version of a family is therefore priced like the closest
listed prefix until the table (or the user's config) lists it.

OpenAI and Google count cached prompt tokens inside their input tokens; their adapters report
them apart (``input`` without them, ``cache_read`` for them) so that each token is priced once.
Neither charges more for writing a cache, so their ``cache_write`` is the input price.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from types import MappingProxyType

from ralphctl.domain.model import UNNAMED_MODEL, IterationResult, ModelTokens, TokenUsage

#: When each provider's shipped prices were checked, and against what (docs/guards.md).
PRICES_AS_OF: Mapping[str, str] = MappingProxyType(
    {
        "anthropic": "2026-11-21",  # Anthropic's pricing pages
        "openai": "2025-12",  # the list prices last known to us, not re-checked since
        "google": "2025-12",  # the same
        "xai": "2025-12",  # the same
    }
)
PER_MILLION = 1_000_000
#: The prefix of a price that applies to every model a longer prefix does not name (a flat
#: ``[loops.costs]`` table).
EVERY_MODEL = "*"
_SEPARATORS = frozenset("-_.:@")


class CostSource(StrEnum):
    REPORTED = "reported"
    ESTIMATED = "estimated"
    RECOVERED = "recovered"  # read back from a transcript after the runner died (engine)


@dataclass(frozen=True, slots=True)
class Price:
    """US dollars per million tokens; ``cache_write`` is the 5-minute cache write price."""

    input: float
    output: float
    cache_read: float
    cache_write: float

    def cost(self, tokens: TokenUsage) -> float:
        return (
            tokens.input * self.input
            + tokens.output * self.output
            + tokens.cache_read * self.cache_read
            + tokens.cache_write * self.cache_write
        ) / PER_MILLION


_FABLE_5 = Price(input=10.0, output=50.0, cache_read=1.0, cache_write=12.5)
_FABLE_5_1 = Price(input=10.0, output=50.0, cache_read=0.25, cache_write=12.5)
_OPUS_5_5 = Price(input=4.0, output=20.0, cache_read=0.2, cache_write=5.0)
_OPUS_4_5 = Price(input=5.0, output=25.0, cache_read=0.5, cache_write=6.25)
_OPUS_4 = Price(input=15.0, output=75.0, cache_read=1.5, cache_write=18.75)
_SONNET_5_5 = Price(input=2.0, output=10.0, cache_read=0.1, cache_write=2.5)
_SONNET_5 = Price(input=2.0, output=10.0, cache_read=0.2, cache_write=2.5)
_SONNET_3_5 = Price(input=3.0, output=15.0, cache_read=0.3, cache_write=3.75)
_HAIKU_5_5 = Price(input=0.1, output=0.5, cache_read=0.01, cache_write=0.125)
_HAIKU_4_5 = Price(input=1.0, output=5.0, cache_read=0.1, cache_write=1.25)
_HAIKU_3_5 = Price(input=0.8, output=4.0, cache_read=0.08, cache_write=1.0)
_HAIKU_3 = Price(input=0.25, output=1.25, cache_read=0.03, cache_write=0.3)

#: Anthropic's models, as of ``PRICES_AS_OF["anthropic"]``. Haiku 5.5 is its price for prompts
#: up to 100,000 tokens (longer prompts cost 5x; per-request prompt sizes are not known here).
ANTHROPIC_PRICES: Mapping[str, Price] = MappingProxyType(
    {
        "claude-fable-5-1": _FABLE_5_1,
        "claude-mythos-5-1": _FABLE_5_1,
        "claude-fable-5": _FABLE_5,
        "claude-mythos-5": _FABLE_5,
        "claude-opus-5-5": _OPUS_5_5,
        "claude-opus-5": _OPUS_4_5,
        "claude-opus-4-8": _OPUS_4_5,
        "claude-opus-4-7": _OPUS_4_5,
        "claude-opus-4-6": _OPUS_4_5,
        "claude-opus-4-5": _OPUS_4_5,
        "claude-opus-4": _OPUS_4,
        "claude-3-opus": _OPUS_4,
        "claude-sonnet-5-5": _SONNET_5_5,
        "claude-sonnet-5": _SONNET_5,
        "claude-sonnet-4": _SONNET_3_5,
        "claude-3-7-sonnet": _SONNET_3_5,
        "claude-3-5-sonnet": _SONNET_3_5,
        "claude-haiku-5-5": _HAIKU_5_5,
        "claude-haiku-4-5": _HAIKU_4_5,
        "claude-3-5-haiku": _HAIKU_3_5,
        "claude-3-haiku": _HAIKU_3,
    }
)


def _uncached(input: float, output: float, cache_read: float | None = None) -> Price:
    """A price whose cache writes cost the input price (no premium), as OpenAI's and Google's;
    without a cache price, cached tokens cost the input price too."""
    return Price(input, output, input if cache_read is None else cache_read, input)


_GPT_5 = _uncached(1.25, 10.0, 0.125)
_GPT_5_MINI = _uncached(0.25, 2.0, 0.025)

#: OpenAI's models, as of ``PRICES_AS_OF["openai"]``. ``gpt-5`` prices ``gpt-5-codex``,
#: ``gpt-5.1``, ``gpt-5.1-codex`` and ``gpt-5.1-codex-max`` too (the same list price).
OPENAI_PRICES: Mapping[str, Price] = MappingProxyType(
    {
        "gpt-5": _GPT_5,
        "gpt-5.2": _uncached(1.75, 14.0, 0.175),
        "gpt-5-pro": _uncached(15.0, 120.0),
        "gpt-5-mini": _GPT_5_MINI,
        "gpt-5-codex-mini": _GPT_5_MINI,
        "gpt-5.1-codex-mini": _GPT_5_MINI,
        "gpt-5-nano": _uncached(0.05, 0.4, 0.005),
        "gpt-4.1": _uncached(2.0, 8.0, 0.5),
        "gpt-4.1-mini": _uncached(0.4, 1.6, 0.1),
        "gpt-4.1-nano": _uncached(0.1, 0.4, 0.025),
        "gpt-4o": _uncached(2.5, 10.0, 1.25),
        "gpt-4o-mini": _uncached(0.15, 0.6, 0.075),
        "o3": _uncached(2.0, 8.0, 0.5),
        "o3-pro": _uncached(20.0, 80.0),
        "o3-deep-research": _uncached(10.0, 40.0, 2.5),
        "o3-mini": _uncached(1.1, 4.4, 0.55),
        "o4-mini": _uncached(1.1, 4.4, 0.275),
        "codex-mini": _uncached(1.5, 6.0, 0.375),
    }
)

#: Google's Gemini models, as of ``PRICES_AS_OF["google"]``. The Pro models cost more for
#: prompts over 200,000 tokens (2.5 Pro: 2.50 in, 15.00 out, 0.25 cached; 3 Pro: 4.00, 18.00,
#: 0.40); estimates cannot see prompt sizes and use the lower price.
GOOGLE_PRICES: Mapping[str, Price] = MappingProxyType(
    {
        "gemini-3-pro": _uncached(2.0, 12.0, 0.2),
        "gemini-3-flash": _uncached(0.5, 3.0, 0.05),
        "gemini-2.5-pro": _uncached(1.25, 10.0, 0.125),
        "gemini-2.5-flash": _uncached(0.3, 2.5, 0.03),
        "gemini-2.5-flash-lite": _uncached(0.1, 0.4, 0.01),
        "gemini-2.0-flash": _uncached(0.1, 0.4, 0.025),
        "gemini-2.0-flash-lite": _uncached(0.075, 0.3),
    }
)

#: xAI's coding model, as of ``PRICES_AS_OF["xai"]`` (offered by OpenCode, Copilot, Cursor).
XAI_PRICES: Mapping[str, Price] = MappingProxyType({"grok-code-fast-1": _uncached(0.2, 1.5, 0.02)})

#: Model-name prefix → price: every provider's table.
DEFAULT_PRICES: Mapping[str, Price] = MappingProxyType(
    {**ANTHROPIC_PRICES, **OPENAI_PRICES, **GOOGLE_PRICES, **XAI_PRICES}
)


@dataclass(frozen=True, slots=True)
class Cost:
    """An iteration's cost: ``usd`` None means unknown; ``unpriced`` lists models without a
    price (the reason it is unknown), for a warning the caller shows once per model."""

    usd: float | None
    source: CostSource | None
    unpriced: tuple[str, ...] = ()


def iteration_cost(result: IterationResult, prices: Mapping[str, Price] = DEFAULT_PRICES) -> Cost:
    """The reported cost if the agent gave one, else its tokens priced per model."""
    if result.cost_usd is not None:
        return Cost(result.cost_usd, CostSource.REPORTED)
    usage = result.model_tokens or (
        (ModelTokens(result.model or UNNAMED_MODEL, result.tokens),)
        if result.tokens != TokenUsage()
        else ()
    )
    if not usage:
        return Cost(None, None)
    priced = [(entry, price_for(entry.model, prices)) for entry in usage]
    unpriced = tuple(sorted({entry.model for entry, price in priced if price is None}))
    if unpriced:
        return Cost(None, None, unpriced)
    total = sum(price.cost(entry.tokens) for entry, price in priced if price is not None)
    return Cost(total, CostSource.ESTIMATED)


def price_for(model: str, prices: Mapping[str, Price] = DEFAULT_PRICES) -> Price | None:
    """The price of the longest prefix of ``model`` listed in ``prices`` (see the module),
    else the ``EVERY_MODEL`` price if there is one."""
    best: tuple[int, Price] | None = None
    if (every := prices.get(EVERY_MODEL)) is not None:
        best = (0, every)
    for name in _names(model):
        for prefix, price in prices.items():
            key = _canonical(prefix)
            matches = name == key or (name.startswith(key) and name[len(key)] in _SEPARATORS)
            if matches and (best is None or len(key) > best[0]):
                best = (len(key), price)
    return None if best is None else best[1]


def _names(model: str) -> list[str]:
    """``model`` in canonical form (``_canonical``) without its ``[…]`` suffix, then without
    each provider prefix."""
    name = _canonical(model.strip().partition("[")[0])
    names = [name]
    for index, char in enumerate(name):
        if char in "/.":
            names.append(name[index + 1 :])
    return names


def _canonical(name: str) -> str:
    """``name`` in lower case, a dot between two digits written as a hyphen."""
    chars = list(name.lower())
    for index in range(1, len(chars) - 1):
        if chars[index] == "." and chars[index - 1].isdigit() and chars[index + 1].isdigit():
            chars[index] = "-"
    return "".join(chars)
