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
from typing import Any, Self

import hyperscan

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
    h.update(f"{MATCHER_FORMAT}\x00{code_digest()}\x00{hyperscan.__version__}\x00".encode())
    h.update(options.encode())
    # one join and one encode: C speed, however many specs
    blob = "\x00".join(f"{s.key}\x01{s.pattern}\x01{s.message}" for s in specs)
    h.update(blob.encode("utf-8", "surrogatepass"))
    return h.hexdigest()[:32]


def matcher_path(cache_dir: Path, digest: str) -> Path:
    return Path(cache_dir) / f"matcher-{digest}.pkl"


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
    unused: list[tuple[float, Path]] = []
    removed: list[str] = []
    try:
        entries = list(os.scandir(cache_dir))
    except OSError:
        return removed
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
        if name.startswith(_PREFIXES) and name not in in_use:
            unused.append((mtime, Path(e.path)))
    unused.sort(reverse=True)  # most recently used first
    for mtime, p in unused[KEEP_UNUSED:]:
        if now - mtime > MAX_UNUSED_AGE_S:
            _unlink(p, removed)
    return removed


def _unlink(p: Path, removed: list[str]) -> None:
    try:
        p.unlink()
        removed.append(p.name)
    except OSError:
        pass
