"""What the matching app tells the apps above it, without importing them.

``text_matched`` is sent after each paste or API match with its ``MatchResult``; the
learning loop counts usage from it (``kb.loop.usage``). Never the text: a receiver sees
which records matched, nothing of the paste. A receiver must not raise: a paste never
fails for a by-product.
"""

from __future__ import annotations

from typing import Any

from django.dispatch import Signal

text_matched = Signal()  # keyword: result


def matched(result: Any) -> None:
    """Tell every receiver which records ``result`` matched."""
    text_matched.send(sender=__name__, result=result)
