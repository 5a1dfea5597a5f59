"""The on-disk cache of built matchers and compiled shards: keys, loading, clean-up.

Why: rebuilding the matcher from the records (`Matcher.build`) at a worker start costs
grouping every spec, loading the shards one by one and rebuilding the similarity index,
even when every shard comes from the cache. So the whole built matcher is pickled next
to its shards under the hash of everything it was built from -- the specs in order, the
build options, and the source of this package (so a code change never loads a matcher
built by older code) -- and a worker start is: hash the specs, load one file.

Files in the cache directory are named by content hash, so nothing ever goes stale; but
every distinct set of records leaves files behind. `cleanup` bounds that: a file no current
build uses is deleted once it is older than `MAX_UNUSED_AGE_S` *and* not among the
`KEEP_UNUSED` most recently used ones (a cache hit refreshes a file's mtime). Files are
only ever replaced atomically (`os.replace`), and a loaded file is read whole, so deleting
one under a running process is harmless.

Across hosts the directory is only a cache in front of a `BlobStore` (a protocol: the
database or a Django storage implement it in ``kb.matching.store``, outside this Django-free
package). A host whose directory lacks the matcher file fetches it (`fetch`) instead of
compiling, and a host that compiled one publishes it (`publish`). The file is the unit: it
holds every shard's serialised database, so one digest says everything a host needs. Stored
objects are written once under their digest (the content can only be the same), so two
hosts publishing one digest at once is harmless: the second finds it there.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import pickle
import tempfile
import time
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any, BinaryIO, Protocol, Self

import hyperscan

# the engine's version is part of every digest; hyperscan sets it at import, its stub omits it
HYPERSCAN_VERSION: str = hyperscan.__version__  # type: ignore[attr-defined]
MATCHER_FORMAT = "kb-matcher-built-v1"
KEEP_UNUSED = 8  # most recently used files kept whatever their age
MAX_UNUSED_AGE_S = 24 * 3600  # unused files older than this (and not among those) go
TMP_AGE_S = 3600  # a temporary file this old is left over from a crashed writer
_PREFIXES = ("shard-", "matcher-")


@lru_cache(maxsize=1)
def code_digest() -> str:
    """Hash of this package's own source (not the normaliser: nothing of it is pickled)."""
    h = hashlib.sha256()
    here = Path(__file__).resolve().parent
    for p in sorted(here.glob("*.py")):
        h.update(p.name.encode())
        h.update(p.read_bytes())
    return h.hexdigest()[:16]


def specs_digest(specs: Sequence[Any], options: str) -> str:
    """Content hash of the specs (in order: the first key of a pattern is the one shown)."""
    h = hashlib.sha256()
    h.update(f"{MATCHER_FORMAT}\x00{code_digest()}\x00{HYPERSCAN_VERSION}\x00".encode())
    h.update(options.encode())
    # one join and one encode: C speed, however many specs
    blob = "\x00".join(f"{s.key}\x01{s.pattern}\x01{s.message}" for s in specs)
    h.update(blob.encode("utf-8", "surrogatepass"))
    return h.hexdigest()[:32]


def build_options(shard_size: int, with_similarity: bool) -> str:
    """The build options a matcher file's digest covers (one spelling for every caller)."""
    return f"{shard_size}\x00{with_similarity}"


def matcher_path(cache_dir: Path, digest: str) -> Path:
    return Path(cache_dir) / f"matcher-{digest}.pkl"


class BlobStore(Protocol):
    """Bytes under a name, written once, readable by every host (see the module docstring).

    ``get`` streams the named object into ``into`` and says whether it was there (whole and
    intact: an implementation checks what it wrote); ``put`` stores ``source`` under
    ``name`` unless it is there already and says whether it wrote; ``cleanup`` deletes
    objects no name in ``in_use`` needs, bounded as the local directory's clean-up is.
    """

    def get(self, name: str, into: BinaryIO) -> bool: ...

    def put(self, name: str, source: Path) -> bool: ...

    def cleanup(self, in_use: set[str]) -> list[str]: ...


def fetch(store: BlobStore, path: Path) -> bool:
    """Copy ``path``'s object from ``store`` into the cache directory; whether it came.

    Written to a temporary file and renamed, like `save`: a worker loading the same path
    meanwhile sees no file or the whole one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".tmp-{path.name.split('-')[0]}-")
    try:
        with os.fdopen(fd, "wb") as fh:
            found = store.get(path.name, fh)
        if found:
            os.replace(tmp, path)
            return True
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    Path(tmp).unlink(missing_ok=True)
    return False


def publish(store: BlobStore, path: Path) -> bool:
    """Store the local file ``path`` for the other hosts (if it is not there already)."""
    if not path.is_file():
        return False
    written = store.put(path.name, path)
    if written:
        store.cleanup({path.name})
    return written


def expired(entries: list[tuple[float, str]], in_use: set[str], now: float) -> list[str]:
    """Names to delete among ``(last used, name)`` entries: not in use, not among the
    `KEEP_UNUSED` most recently used, and unused for `MAX_UNUSED_AGE_S` (the local
    directory and the stores share these bounds)."""
    unused = sorted((e for e in entries if e[1] not in in_use), reverse=True)
    return [name for used, name in unused[KEEP_UNUSED:] if now - used > MAX_UNUSED_AGE_S]


class Pickled:
    """``dumps``/``loads`` for the matcher's own objects: pickle protocol 5, and a type
    check on load. Only bytes this code wrote are ever loaded (the cache directory, a
    worker's own copy), so a pickle is safe here and keeps the C tables as they are."""

    __slots__ = ()

    def dumps(self) -> bytes:
        return pickle.dumps(self, protocol=5)

    @classmethod
    def loads(cls, data: bytes) -> Self:
        obj = pickle.loads(data)  # noqa: S301 - only our own dumps
        if not isinstance(obj, cls):
            raise TypeError(f"not a {cls.__name__}")
        return obj


def load(path: Path) -> Any | None:
    """The pickled object at ``path``, or None (missing, truncated, or from older code)."""
    try:
        with path.open("rb") as fh:
            obj = pickle.load(fh)  # noqa: S301 - our own cache directory
    except (OSError, EOFError, pickle.UnpicklingError, AttributeError, TypeError, ValueError):
        return None
    touch(path)
    return obj


def save(path: Path, obj: Any) -> None:
    """Pickle ``obj`` to ``path`` atomically (concurrent workers never see half a file)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".tmp-{path.name.split('-')[0]}-")
    try:
        with os.fdopen(fd, "wb") as fh:
            pickle.dump(obj, fh, protocol=5)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def touch(path: Path) -> None:
    """Mark a cache file as used now (clean-up keeps recently used files)."""
    with contextlib.suppress(OSError):
        os.utime(path)


def cleanup(cache_dir: Path, in_use: set[str], *, now: float | None = None) -> list[str]:
    """Delete cache files no current build uses, beyond the bounds above; returns names."""
    now = time.time() if now is None else now
    removed: list[str] = []
    try:
        entries = list(os.scandir(cache_dir))
    except OSError:
        return removed
    candidates: list[tuple[float, str]] = []
    for e in entries:
        name = e.name
        try:
            mtime = e.stat().st_mtime
        except OSError:
            continue
        if name.startswith(".tmp-"):
            if now - mtime > TMP_AGE_S:
                _unlink(Path(e.path), removed)
            continue
        if name.startswith(_PREFIXES):
            candidates.append((mtime, name))
    for name in expired(candidates, in_use, now):
        _unlink(Path(cache_dir) / name, removed)
    return removed


def _unlink(p: Path, removed: list[str]) -> None:
    try:
        p.unlink()
        removed.append(p.name)
    except OSError:
        pass
