"""Compiled matchers stored in the database, for every host to load instead of compiling.

Why the database: it is the one store every host of a deployment already shares, so a new
host needs no further set-up to serve without compiling (``kb.matching.store`` says how
it is read and written; a Django storage can be chosen instead). An object is written once
under its name (the content hash of what it was built from) and split into parts, so
neither side ever holds one huge value in a single query or row. A part is itself stored by
the hash of its bytes and shared by every object that holds those bytes: a matcher built
after an import holds most of the last one's sections unchanged (its shards, the start of
every table), and publishing it writes only the parts that are new.

The tables keep the ``kb_`` names they were created with while these models were part of
the records app (``Meta.db_table``): moving them to this app changed no table.
"""

from __future__ import annotations

from django.db import models
from django.utils import timezone


class MatcherBlob(models.Model):
    """One stored object: its name, size and MAC, and the digests of its parts in order.
    The row and the parts it lacked are written in one transaction, so a reader that finds
    the row finds every part."""

    name = models.CharField(max_length=100, primary_key=True)
    size = models.BigIntegerField()
    parts = models.JSONField(default=list)  # `MatcherBlobPart.digest`s, in order
    # HMAC-SHA256 of the bytes keyed by SECRET_KEY (``kb.matching.store``): a checksum
    # anyone who writes the row could recompute would prove nothing.
    mac = models.CharField(max_length=64)
    created_at = models.DateTimeField(default=timezone.now)
    # Refreshed when a host fetches it: clean-up keeps what hosts still load.
    used_at = models.DateTimeField(default=timezone.now)

    class Meta:
        db_table = "kb_matcherblob"
        verbose_name = "stored matcher"

    def __str__(self) -> str:
        return self.name


class MatcherBlobPart(models.Model):
    """A slice of stored objects' bytes under its SHA-256: written once, shared by every
    object that lists it, deleted once none does."""

    digest = models.CharField(max_length=64, primary_key=True)
    size = models.PositiveIntegerField()
    data = models.BinaryField()
    # Refreshed by a writer that lists it again: clean-up spares a part a writer is about
    # to list (see ``kb.matching.store.DatabaseStore.cleanup``).
    used_at = models.DateTimeField(default=timezone.now)

    class Meta:
        db_table = "kb_matcherblobpart"

    def __str__(self) -> str:
        return self.digest
