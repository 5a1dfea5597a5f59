"""Where hosts share compiled matchers: the database (default) or a Django storage.

Why: compiling the pattern databases is the slow part of a start, and every host of a
deployment compiles the same thing from the same records. ``kb.engine.cache`` keeps
compiled matchers in a local directory under a content hash; this module gives it a
store every host can read (the ``BlobStore`` protocol), chosen by ``KB_MATCHER_STORE``:

- ``database`` (the default): rows of ``kb.matching.models.MatcherBlob``, the bytes split into
  parts of at most ``PART_BYTES`` (a PostgreSQL bytea, an SQLite blob). Nothing more to set
  up.
- ``storage:<alias>``: any entry of ``STORAGES`` (django-storages' S3 backend, say), so an
  object store works without code changes.
- ``none``: each host compiles for itself (the local directory only).

Every object is written once under its name, the content hash of what it was built from:
two hosts that write one name at once write the same bytes, and whichever comes second
finds the first's (a unique key in the database; a marker naming complete parts in a
storage). A reader checks the size and the MAC it was told, so a torn or foreign object
is never loaded: it counts as absent (with a log line) and the host compiles instead.

Parts are stored by the SHA-256 of their bytes and shared between objects, cut where the
file's sections start (``kb.engine.cache.section_starts``): a matcher built after an
import holds most of the last one's sections alike (every unchanged shard's database, the
start of every table), so publishing it writes only the parts that are new -- a fraction of
the file, however many records there are.

Why a MAC (HMAC-SHA256 keyed by ``SECRET_KEY``, ``SECRET_KEY_FALLBACKS`` accepted while a
key is rotated) and not a plain checksum kept beside the bytes: whoever can write the
table or the bucket could write a matching checksum too. The objects are in a format that
runs no code (``kb.engine.cache``), and the MAC keeps even their Hyperscan databases,
which Hyperscan trusts once loaded, to what a host of this deployment compiled.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from collections.abc import Iterator, Sequence
from datetime import timedelta
from itertools import pairwise
from pathlib import Path
from typing import Any, BinaryIO, NamedTuple

from django.conf import settings
from django.core.files.base import ContentFile
from django.db import IntegrityError, connection, transaction
from django.utils import timezone
from django.utils.crypto import constant_time_compare, salted_hmac

from kb.engine import cache
from kb.matching.models import MatcherBlob, MatcherBlobPart

log = logging.getLogger(__name__)

PART_BYTES = 2 * 2**20  # at most this many bytes a part: bounded memory per query; small
# enough that a table an import lengthens rewrites little more than its new rows
STORAGE_PREFIX = "kb-matcher"  # the storage's "directory" for stored matchers
PARTS_DIR = f"{STORAGE_PREFIX}/parts"  # a storage's parts, each named by its digest
MAC_SALT = "kb.matching.store"  # keeps these MACs apart from every other use of the key


class Piece(NamedTuple):
    """One part of a file about to be stored: where it is and the digest of its bytes."""

    offset: int
    size: int
    digest: str


def _spans(size: int, cuts: Sequence[int]) -> Iterator[tuple[int, int]]:
    """(offset, size) of the parts of a ``size``-byte file: cut at every one of ``cuts``
    (its sections' starts), and every `PART_BYTES` within a section, so a section lies in
    the same parts whichever file holds it."""
    bounds = sorted({0, size, *(c for c in cuts if 0 < c < size)})
    for start, end in pairwise(bounds):
        for at in range(start, end, PART_BYTES):
            yield at, min(PART_BYTES, end - at)


def _pieces(source: Path, cuts: Sequence[int], signer: Signer) -> list[Piece]:
    """The parts of ``source`` with their digests, its bytes fed to ``signer`` as read."""
    pieces = []
    with source.open("rb") as fh:
        for offset, size in _spans(source.stat().st_size, cuts):
            data = fh.read(size)
            signer.update(data)
            pieces.append(Piece(offset, size, hashlib.sha256(data).hexdigest()))
    return pieces


def _read(source: Path, piece: Piece) -> bytes:
    with source.open("rb") as fh:
        fh.seek(piece.offset)
        return fh.read(piece.size)


class Signer:
    """The MAC of a stream of bytes under the current key, and a check of a stored MAC
    against the current key and the fallbacks (read once, then fed chunk by chunk)."""

    def __init__(self) -> None:
        keys = [settings.SECRET_KEY, *getattr(settings, "SECRET_KEY_FALLBACKS", [])]
        self._macs = [salted_hmac(MAC_SALT, b"", secret=k, algorithm="sha256") for k in keys]

    def update(self, chunk: bytes) -> None:
        for mac in self._macs:
            mac.update(chunk)

    def hexdigest(self) -> str:
        """The MAC under the current key (what a writer stores)."""
        return self._macs[0].hexdigest()

    def verify(self, stored: object) -> bool:
        return any(constant_time_compare(m.hexdigest(), str(stored)) for m in self._macs)


def _intact(name: str, size: int, expected_size: object, signer: Signer, mac: object) -> bool:
    """Whether a read object is the one a host of this deployment stored; if not, the
    log line that says why (it is then ignored, and the host compiles)."""
    if size != expected_size:
        log.warning(
            "stored matcher %s is damaged (%d bytes, not %s): ignored", name, size, expected_size
        )
        return False
    if not signer.verify(mac):
        log.warning(
            "stored matcher %s is not signed with this deployment's SECRET_KEY: ignored", name
        )
        return False
    return True


# On PostgreSQL a part's bytes travel as a binary parameter and a binary result: Django's
# client-side binding would write them hex-escaped into the statement's text, and read
# them back as hex, several times slower for parts of megabytes.
_PG_INSERT_PART = (
    "INSERT INTO kb_matcherblobpart (digest, size, data, used_at) VALUES (%s, %s, %b, now()) "
    "ON CONFLICT (digest) DO NOTHING"  # the same bytes, from another writer
)
_PG_READ_PART = "SELECT data FROM kb_matcherblobpart WHERE digest = %s"


def _insert_part(digest: str, data: bytes) -> None:
    """Store one part, unless a part of that digest is stored already."""
    if connection.vendor == "postgresql":
        import psycopg

        connection.ensure_connection()
        with psycopg.Cursor(connection.connection) as cur:
            cur.execute(_PG_INSERT_PART, (digest, len(data), data))
        return
    MatcherBlobPart.objects.bulk_create(
        [MatcherBlobPart(digest=digest, size=len(data), data=data)], ignore_conflicts=True
    )


def _read_part(digest: str) -> bytes:
    """A stored part's bytes (empty when it is missing: the object's size check fails)."""
    if connection.vendor == "postgresql":
        import psycopg

        connection.ensure_connection()
        with psycopg.Cursor(connection.connection) as cur:
            cur.execute(_PG_READ_PART, (digest,), binary=True)
            row = cur.fetchone()
        return bytes(row[0]) if row else b""
    data = MatcherBlobPart.objects.filter(digest=digest).values_list("data", flat=True).first()
    return bytes(data or b"")


class DatabaseStore:
    """Stored matchers as rows of the default database (see the module docstring)."""

    def get(self, name: str, into: BinaryIO) -> bool:
        blob = MatcherBlob.objects.filter(name=name).first()
        if blob is None:
            return False
        signer = Signer()
        size = 0
        digests = blob.parts if isinstance(blob.parts, list) else []
        for digest in digests:  # one part per query: memory bounded by a part
            data = _read_part(str(digest))
            signer.update(data)
            size += len(data)
            into.write(data)
        if not _intact(name, size, blob.size, signer, blob.mac):
            return False
        MatcherBlob.objects.filter(name=name).update(used_at=timezone.now())
        return True

    def put(self, name: str, source: Path, cuts: Sequence[int] = ()) -> bool:
        if MatcherBlob.objects.filter(name=name).exists():
            return False
        signer = Signer()
        pieces = _pieces(source, cuts, signer)
        digests = [p.digest for p in pieces]
        try:
            with transaction.atomic():
                # The row first: a second writer of the same name waits on its key and
                # then fails, before writing any part.
                MatcherBlob.objects.create(
                    name=name, size=source.stat().st_size, mac=signer.hexdigest(), parts=digests
                )
                # Parts stored already are marked used (a clean-up running meanwhile
                # spares them); the others are written, one query each.
                held = self._touch(set(digests))
                for piece in pieces:
                    if piece.digest not in held:
                        _insert_part(piece.digest, _read(source, piece))
                        held.add(piece.digest)
        except IntegrityError:
            return False  # another host stored it meanwhile: the same bytes
        return True

    @staticmethod
    def _touch(digests: set[str]) -> set[str]:
        """Mark the stored ones of ``digests`` used now; which of them are stored."""
        held: set[str] = set()
        now = timezone.now()
        names = sorted(digests)
        for i in range(0, len(names), 500):
            batch = names[i : i + 500]
            MatcherBlobPart.objects.filter(digest__in=batch).update(used_at=now)
            held.update(
                MatcherBlobPart.objects.filter(digest__in=batch).values_list("digest", flat=True)
            )
        return held

    def cleanup(self, in_use: set[str]) -> list[str]:
        rows = MatcherBlob.objects.values_list("used_at", "name")
        gone = cache.expired([(u.timestamp(), n) for u, n in rows], in_use, time.time())
        if gone:
            MatcherBlob.objects.filter(name__in=gone).delete()
            # A part no object lists any more goes, unless a writer listed it lately:
            # one whose object is not committed yet (it touched the part first).
            listed = {d for parts in MatcherBlob.objects.values_list("parts", flat=True)
                      for d in (parts or ())}  # fmt: skip
            recent = timezone.now() - timedelta(seconds=cache.TMP_AGE_S)
            stale = MatcherBlobPart.objects.filter(used_at__lt=recent).values_list(
                "digest", flat=True
            )
            orphans = [d for d in stale if d not in listed]
            for i in range(0, len(orphans), 500):
                MatcherBlobPart.objects.filter(
                    digest__in=orphans[i : i + 500], used_at__lt=recent
                ).delete()
        return gone


class StorageStore:
    """Stored matchers as files of a Django storage (``STORAGES[alias]``).

    A storage may rename a file whose name is taken (``get_available_name``) and need not
    write atomically, so the parts are written first, each a file named by its digest
    (`PARTS_DIR`), and a small marker after them, naming the parts in order with the
    object's size and MAC: a reader trusts only a marker, and a marker only ever names
    parts written before it.
    """

    def __init__(self, alias: str) -> None:
        from django.core.files.storage import storages

        self.storage = storages[alias]

    def _marker(self, name: str) -> str:
        return f"{STORAGE_PREFIX}/{name}.json"

    def _read_marker(self, name: str) -> dict[str, Any] | None:
        """The marker of ``name``: a dict naming its parts, or None (absent, or a marker
        of another layout, which is stored again over)."""
        try:
            with self.storage.open(self._marker(name), "rb") as fh:
                marker = json.loads(fh.read())
        except (OSError, ValueError):
            return None
        if not isinstance(marker, dict) or not isinstance(marker.get("parts"), list):
            return None
        return marker

    def get(self, name: str, into: BinaryIO) -> bool:
        marker = self._read_marker(name)
        if marker is None:
            return False
        signer = Signer()
        size = 0
        try:
            for digest in marker["parts"]:
                with self.storage.open(f"{PARTS_DIR}/{digest}", "rb") as fh:
                    data = fh.read(PART_BYTES + 1)  # a part is never longer
                signer.update(data)
                size += len(data)
                into.write(data)
        except OSError:
            return False
        return _intact(name, size, marker.get("size"), signer, marker.get("mac"))

    def put(self, name: str, source: Path, cuts: Sequence[int] = ()) -> bool:
        if self._read_marker(name) is not None:
            return False
        signer = Signer()
        pieces = _pieces(source, cuts, signer)
        for piece in dict.fromkeys(pieces):
            path = f"{PARTS_DIR}/{piece.digest}"
            if self.storage.exists(path) and self.storage.size(path) == piece.size:
                continue  # the same bytes, stored for another object
            if self.storage.exists(path):
                self.storage.delete(path)  # torn by a writer that crashed: written again
            self.storage.save(path, ContentFile(_read(source, piece)))
        marker = {
            "parts": [p.digest for p in pieces],
            "size": source.stat().st_size,
            "mac": signer.hexdigest(),
        }
        self.storage.save(self._marker(name), ContentFile(json.dumps(marker).encode()))
        return True

    def cleanup(self, in_use: set[str]) -> list[str]:
        try:
            _dirs, files = self.storage.listdir(STORAGE_PREFIX)
        except (OSError, NotImplementedError):
            return []
        entries = [  # a marker's time is when it was written: storages keep no use time
            (self.storage.get_modified_time(f"{STORAGE_PREFIX}/{f}").timestamp(), f[:-5])
            for f in files
            if f.endswith(".json")
        ]
        gone = cache.expired(entries, in_use, time.time())
        for name in gone:
            self.storage.delete(self._marker(name))
        if gone:
            self._drop_unlisted({n for _t, n in entries} - set(gone))
        return gone

    def _drop_unlisted(self, kept: set[str]) -> None:
        """Delete the part files no kept marker lists, once old enough that no writer can
        be about to list them (its marker comes after its parts)."""
        listed = {d for n in kept for d in (self._read_marker(n) or {}).get("parts", ())}
        try:
            _dirs, files = self.storage.listdir(PARTS_DIR)
        except (OSError, NotImplementedError):
            return
        now = time.time()
        for f in files:
            path = f"{PARTS_DIR}/{f}"
            if f in listed:
                continue
            if now - self.storage.get_modified_time(path).timestamp() > cache.TMP_AGE_S:
                self.storage.delete(path)


def matcher_store() -> cache.BlobStore | None:
    """The store ``KB_MATCHER_STORE`` names, or None (each host on its own)."""
    choice = settings.KB_MATCHER_STORE
    if choice == "database":
        return DatabaseStore()
    if choice.startswith("storage:"):
        return StorageStore(choice.removeprefix("storage:"))
    return None
