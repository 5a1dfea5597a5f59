"""One example budget for the property tests: ``make fuzz`` runs 10^5 examples IN TOTAL.

Outside the fuzz run (``make test``) every property keeps its own small default. Under
``HYPOTHESIS_PROFILE=fuzz`` the total (``FUZZ_EXAMPLES``, default 100,000) is split
between the three areas below, and each area's share evenly between its properties:

==========  =====  ==========  ===================  ======================================
area        share  properties  examples / property  tests
==========  =====  ==========  ===================  ======================================
importer    30 %   2           15,000               tests/test_importer_props.py
matcher     30 %   4           7,500                tests/engine/test_match_props.py
normaliser  40 %   12          3,333 or 3,334       tests/engine/test_normalise_props.py
==========  =====  ==========  ===================  ======================================

The importer's properties get the most examples each: the import path takes untrusted
files and writes the database. ``test_prop_fuzz_budget_adds_up`` (in
``tests/engine/test_match_props.py``) checks that every property is registered here and
that the shares add up to the total. Schemathesis (``tests/test_api_schemathesis.py``)
has its own count, on top of this budget.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any, TypeVar

from hypothesis import HealthCheck, settings

from tests.hypothesis_profiles import selected

F = TypeVar("F", bound=Callable[..., Any])

FUZZ = selected() == "fuzz"
TOTAL = int(os.environ.get("FUZZ_EXAMPLES", "100000"))

# area -> (share of TOTAL, number of properties that share it)
SPLIT: dict[str, tuple[float, int]] = {
    "importer": (0.30, 2),
    "matcher": (0.30, 4),
    "normaliser": (0.40, 12),
}

REGISTERED: dict[str, list[str]] = {area: [] for area in SPLIT}


def area_examples(area: str) -> int:
    """The area's share of TOTAL (the last area takes what rounding leaves)."""
    areas = list(SPLIT)
    if area == areas[-1]:
        return TOTAL - sum(area_examples(a) for a in areas[:-1])
    return round(TOTAL * SPLIT[area][0])


def fuzz_examples(area: str, index: int) -> int:
    """Examples the `index`-th property of `area` runs under ``HYPOTHESIS_PROFILE=fuzz``
    (the area's examples split evenly; the first properties take the remainder)."""
    base, extra = divmod(area_examples(area), SPLIT[area][1])
    return max(1, base + (index < extra))


def prop(area: str, default: int, **kwargs: Any) -> Callable[[F], F]:
    """Hypothesis settings for one property of `area`: `default` examples in the suite,
    the area's share of the fuzz budget under ``HYPOTHESIS_PROFILE=fuzz``.

    ``kwargs`` are further `settings` for the default run (health checks are all off
    under fuzz: a long run must not stop on "too slow")."""
    if not FUZZ:
        kwargs.setdefault("deadline", None)
        chosen = settings(max_examples=default, **kwargs)

    def register(fn: F) -> F:
        index = len(REGISTERED[area])
        REGISTERED[area].append(f"{fn.__module__}.{fn.__qualname__}")
        if not FUZZ:
            return chosen(fn)
        return settings(
            max_examples=fuzz_examples(area, index),
            deadline=None,
            suppress_health_check=list(HealthCheck),
        )(fn)

    return register
