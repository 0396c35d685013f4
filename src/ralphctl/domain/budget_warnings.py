"""The ``budget_warning`` event: a budget 80 % spent, said once per budget and loop.

Which budgets were warned about already is read back from the loop's stored events, so a
restarted runner does not say it again.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from ralphctl.domain.stoprules import Budgets, Totals

WARN_AT = 0.8
#: The budgets warned about, as named in the event's ``budget``.
BUDGETS = ("iterations", "runtime", "cost", "tokens")


def budget_warnings(
    totals: Totals, budgets: Budgets, warned: Collection[str], *, at: float = WARN_AT
) -> list[dict[str, Any]]:
    """The data of a ``budget_warning`` for each budget now at least ``at`` spent that is not
    in ``warned`` (exhausted too: one iteration may spend the last fifth at once)."""
    spent = (
        ("iterations", totals.iterations, budgets.max_iterations),
        ("runtime", totals.runtime_s, budgets.max_runtime_s),
        ("cost", totals.cost_usd, budgets.max_cost_usd),
        ("tokens", totals.tokens, budgets.max_tokens),
    )
    warnings = []
    for budget, used, limit in spent:
        if budget in warned or not limit or used < at * limit:
            continue
        fraction = round(used / limit, 3)
        shown = round(used, 6)  # sums of costs: 0.9, not 0.8999999999999999
        warnings.append({"budget": budget, "used": shown, "limit": limit, "fraction": fraction})
    return warnings
