"""What the records app tells the apps above it, without importing them.

``records_published`` is sent by every publisher (the admin's form and bulk actions, an
accepted proposal, the importer once its records are committed): a record was published,
or changed while published. It is an explicit send rather than ``post_save``, because the
importer writes records in bulk, where no ``save`` runs, and an import is how most records
get published. Receivers are connected in their app's ``ready()``; the learning loop
closes the gaps the records now answer (``kb.loop.closing``). A receiver must not raise:
publishing never fails for what follows from it.
"""

from __future__ import annotations

from django.dispatch import Signal

published = Signal()  # keyword: using (the database alias the records were written to)


def records_published(*, using: str | None = None) -> None:
    """Tell every receiver that records were published on ``using``."""
    published.send(sender=__name__, using=using)
