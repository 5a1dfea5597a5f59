"""Where hosts share compiled matchers: the database (default) or a Django storage.

Why: compiling the pattern databases is the slow part of a start, and every host of a
deployment compiles the same thing from the same records. ``kb.engine.cache`` keeps
compiled matchers in a local directory under a content hash; this module gives it a
store every host can read (the ``BlobStore`` protocol), chosen by ``KB_MATCHER_STORE``:

- ``database`` (the default): rows of ``kb.matching.models.MatcherBlob``, the bytes split into
  ``PART_BYTES`` parts (a PostgreSQL bytea, an SQLite blob). Nothing more to set up.
- ``storage:<alias>``: any entry of ``STORAGES`` (django-storages' S3 backend, say), so an
  object store works without code changes.
- ``none``: each host compiles for itself (the local directory only).

Every object is written once under its name, the content hash of what it was built from:
two hosts that write one name at once write the same bytes, and whichever comes second
finds the first's (a unique key in the database; a marker naming a complete file in a
storage). A reader checks the size and the MAC it was told, so a torn or foreign object
is never loaded: it counts as absent (with a log line) and the host compiles instead.

Why a MAC (HMAC-SHA256 keyed by ``SECRET_KEY``, ``SECRET_KEY_FALLBACKS`` accepted while a
key is rotated) and not a plain checksum kept beside the bytes: whoever can write the
table or the bucket could write a matching checksum too. The objects are in a format that
runs no code (``kb.engine.cache``), and the MAC keeps even their Hyperscan databases,
which Hyperscan trusts once loaded, to what a host of this deployment compiled.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from django.conf import settings
from django.core.files import File
from django.core.files.base import ContentFile
from django.db import IntegrityError, transaction
from django.utils import timezone
from django.utils.crypto import constant_time_compare, salted_hmac

from kb.engine import cache
from kb.matching.models import MatcherBlob, MatcherBlobPart

log = logging.getLogger(__name__)

PART_BYTES = 8 * 2**20  # bytes per database row: bounded memory per query on both sides
STORAGE_PREFIX = "kb-matcher"  # the storage's "directory" for stored matchers
MAC_SALT = "kb.matching.store"  # keeps these MACs apart from every other use of the key


def _parts(source: Path) -> Iterator[bytes]:
    with source.open("rb") as fh:
        while chunk := fh.read(PART_BYTES):
            yield chunk


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


def _mac(source: Path) -> str:
    signer = Signer()
    for chunk in _parts(source):
        signer.update(chunk)
    return signer.hexdigest()


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


class DatabaseStore:
    """Stored matchers as rows of the default database (see the module docstring)."""

    def get(self, name: str, into: BinaryIO) -> bool:
        blob = MatcherBlob.objects.filter(name=name).first()
        if blob is None:
            return False
        signer = Signer()
        size = 0
        for index in range(blob.parts):  # one part per query: memory bounded by a part
            row = MatcherBlobPart.objects.filter(blob=blob, index=index).values_list(
                "data", flat=True
            )
            data = bytes(row.first() or b"")
            signer.update(data)
            size += len(data)
            into.write(data)
        if not _intact(name, size, blob.size, signer, blob.mac):
            return False
        MatcherBlob.objects.filter(name=name).update(used_at=timezone.now())
        return True

    def put(self, name: str, source: Path) -> bool:
        if MatcherBlob.objects.filter(name=name).exists():
            return False
        size, mac = source.stat().st_size, _mac(source)
        try:
            with transaction.atomic():
                # The row first: a second writer of the same name waits on its key and
                # then fails, before writing any part.
                blob = MatcherBlob.objects.create(
                    name=name, size=size, mac=mac, parts=-(-size // PART_BYTES)
                )
                for index, chunk in enumerate(_parts(source)):
                    MatcherBlobPart.objects.create(blob=blob, index=index, data=chunk)
        except IntegrityError:
            return False  # another host stored it meanwhile: the same bytes
        return True

    def cleanup(self, in_use: set[str]) -> list[str]:
        rows = MatcherBlob.objects.values_list("used_at", "name")
        gone = cache.expired([(u.timestamp(), n) for u, n in rows], in_use, time.time())
        if gone:
            MatcherBlob.objects.filter(name__in=gone).delete()
        return gone


class StorageStore:
    """Stored matchers as files of a Django storage (``STORAGES[alias]``).

    A storage may rename a file whose name is taken (``get_available_name``) and need not
    write atomically, so the data file is written first and a small marker after it,
    naming the data file with its size and checksum: a reader trusts only a marker, and
    a marker only ever names a complete file.
    """

    def __init__(self, alias: str) -> None:
        from django.core.files.storage import storages

        self.storage = storages[alias]

    def _marker(self, name: str) -> str:
        return f"{STORAGE_PREFIX}/{name}.json"

    def _read_marker(self, name: str) -> dict[str, object] | None:
        try:
            with self.storage.open(self._marker(name), "rb") as fh:
                marker = json.loads(fh.read())
        except (OSError, ValueError):
            return None
        return marker if isinstance(marker, dict) else None

    def get(self, name: str, into: BinaryIO) -> bool:
        marker = self._read_marker(name)
        if marker is None:
            return False
        signer = Signer()
        size = 0
        try:
            with self.storage.open(str(marker["file"]), "rb") as fh:
                while chunk := fh.read(PART_BYTES):
                    signer.update(chunk)
                    size += len(chunk)
                    into.write(chunk)
        except (OSError, KeyError):
            return False
        return _intact(name, size, marker.get("size"), signer, marker.get("mac"))

    def put(self, name: str, source: Path) -> bool:
        if self._read_marker(name) is not None:
            return False
        with source.open("rb") as fh:
            stored = self.storage.save(f"{STORAGE_PREFIX}/{name}", File(fh, name=name))
        marker = {"file": stored, "size": source.stat().st_size, "mac": _mac(source)}
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
            marker = self._read_marker(name)
            self.storage.delete(self._marker(name))
            if marker and marker.get("file"):
                self.storage.delete(str(marker["file"]))
        return gone


def matcher_store() -> cache.BlobStore | None:
    """The store ``KB_MATCHER_STORE`` names, or None (each host on its own)."""
    choice = settings.KB_MATCHER_STORE
    if choice == "database":
        return DatabaseStore()
    if choice.startswith("storage:"):
        return StorageStore(choice.removeprefix("storage:"))
    return None
