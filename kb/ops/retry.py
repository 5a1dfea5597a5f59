"""Exponential backoff, one rule for what retries on this side of the app: the task worker
polling a locked database again (``db_worker``), ``run_with_worker`` starting a process
that exited. Doubling from ``first`` up to ``cap``: a short outage is retried soon, a long
one costs a log line every ``cap`` seconds, not a busy loop."""

from __future__ import annotations


def backoff(attempt: int, first: float, cap: float) -> float:
    """Seconds to wait before retry number ``attempt`` (1, 2, …)."""
    return float(min(cap, first * 2 ** max(0, attempt - 1)))
