"""The hypothesis profiles, registered in one place and chosen by ``HYPOTHESIS_PROFILE``.

``ci`` (the default, for ``make test`` and ``make test-fast``) is derandomised and keeps no
example database: every run draws the same examples, so a red build is a real regression
that reruns red, never a rare draw that the next rerun hides. Property tests that once
found a bug keep it as an explicit ``@example``, which every profile runs.

``fuzz`` (``make fuzz``) is random and keeps its database, so a long run explores new
inputs and replays what it found; the example counts come from ``tests/fuzz_budget.py``.
``long`` is the random profile too, for the properties that read it to run more examples.
``dev`` is random with the local database, for exploring a property by hand.

The profile is loaded when this module is imported (from ``tests/conftest.py``), before
any test module builds its ``@settings``: settings created later inherit from it.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

DEFAULT_PROFILE = "ci"

settings.register_profile("ci", derandomize=True, database=None, deadline=None, print_blob=True)
settings.register_profile(
    "fuzz",
    derandomize=False,
    deadline=None,
    print_blob=True,
    suppress_health_check=list(HealthCheck),
)
settings.register_profile("long", parent=settings.get_profile("fuzz"))
settings.register_profile("dev", derandomize=False, deadline=None, print_blob=True)


def selected() -> str:
    """The profile this run uses: ``HYPOTHESIS_PROFILE``, else ``ci``."""
    return os.environ.get("HYPOTHESIS_PROFILE") or DEFAULT_PROFILE


settings.load_profile(selected())
