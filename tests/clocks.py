"""A clock that tests move by hand, for code that reads time through an injected clock:
a test reaches the next time window by saying so, not by waiting for it."""

from __future__ import annotations


class FakeClock:
    """Stands in for the rate limiter's clock (``kb.ops.middleware.clock``); ``advance`` moves
    time on, so a test reaches the next window without waiting for it."""

    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds
