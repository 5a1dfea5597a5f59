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


class SteppingClock(FakeClock):
    """A clock that moves on by ``step`` each time it is read: code that reads it before
    and after some work sees that work take ``step``."""

    def __init__(self, step: float) -> None:
        super().__init__(0.0)
        self.step = step

    def __call__(self) -> float:
        now = self.now
        self.now += self.step
        return now
