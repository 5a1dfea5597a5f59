"""What the sources app tells the apps above it, without importing them.

``learned`` is sent once a learn's records are committed and it created or changed some:
the curation app (``kb.curation.apps``) builds and publishes the matcher for them there
and then, in the worker or the command that learned, so that no paste compiles it. A
receiver must not raise: a learn never fails for what follows from it.
"""

from __future__ import annotations

from django.dispatch import Signal

__all__ = ["learned"]

learned = Signal()  # keyword: result (kb.sources.learning.LearnResult)
