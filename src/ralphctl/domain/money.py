"""How amounts of money are shown to people and written to JSON: one rule for every face.

People read dollars and cents (``$0.45``, ``$1,234.50``); an amount under a cent keeps two
significant digits (``$0.0042``, ``$0.00013``), so a cheap iteration never reads as ``$0.00``.
JSON carries costs rounded to a millionth of a dollar: sums of floats pick up binary noise
(``0.1 + 0.2 + 0.15`` is ``0.45000000000000007``) that no reader wants, and no price is finer.
"""

from __future__ import annotations

import math

TYPE_CHECKING = False  # the Stop hook imports this module (stop details): typing costs time
if TYPE_CHECKING:
    from typing import Any

#: JSON keeps costs to a millionth of a dollar.
USD_DECIMALS = 6
#: The keys under which free-form JSON (event data, snapshots, loop configs) holds dollars:
#: every ``…_usd`` (cost_usd, max_cost_usd, total_usd, …) and the stats' older ``total_cost``.
USD_SUFFIX = "_usd"
USD_KEYS = frozenset({"total_cost"})
_SMALLEST = 10.0**-USD_DECIMALS


def format_usd(amount: float) -> str:
    """``$0.45``, ``$1,234.50``, ``$0.0042``; ``$0.00`` for zero, ``<$0.000001`` below that."""
    if not math.isfinite(amount):
        return f"${amount}"
    if amount < 0:
        return f"-{format_usd(-amount)}"
    if amount == 0 or amount >= 0.01:
        return f"${amount:,.2f}"
    if amount < _SMALLEST:
        return f"<${_SMALLEST:.{USD_DECIMALS}f}"
    decimals = min(USD_DECIMALS, 1 - math.floor(math.log10(amount)))
    text = f"{amount:.{decimals}f}".rstrip("0")
    return f"${text}" if len(text.partition(".")[2]) >= 2 else f"${amount:.2f}"


def round_usd(amount: float) -> float:
    """``amount`` to a millionth of a dollar, as JSON carries it."""
    return round(amount, USD_DECIMALS)


def round_costs(data: Any) -> Any:
    """A copy of JSON-like ``data`` whose floats under ``USD_KEYS`` are rounded (any depth)."""
    if isinstance(data, dict):
        return {
            key: round_usd(value)
            if isinstance(value, float) and _is_usd(key)
            else round_costs(value)
            for key, value in data.items()
        }
    if isinstance(data, list | tuple):
        return [round_costs(item) for item in data]
    return data


def _is_usd(key: object) -> bool:
    return isinstance(key, str) and (key.endswith(USD_SUFFIX) or key in USD_KEYS)
