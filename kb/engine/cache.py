"""The on-disk cache of built matchers and compiled shards: keys, file format, clean-up.

Why: rebuilding the matcher from the records (`Matcher.build`) at a worker start costs
grouping every spec, loading the shards one by one and rebuilding the similarity index,
even when every shard comes from the cache. So the whole built matcher is written next
to its shards under the hash of everything it was built from -- the specs in order, the
build options, and the source of this package (so a code change never loads a matcher
built by older code) -- and a worker start is: hash the specs, load that file and the
shard files it names.

The file format runs no code, whoever wrote the file (`pack`/`unpack`): a line naming the
format, a JSON header with the plain data, then raw byte sections that the header only
counts (Hyperscan's own serialised databases, ``array`` tables, lists of strings joined by
NUL). A file that is not in the current format -- an older pickle, a foreign or damaged
file -- is refused with a log line and rebuilt, never loaded: the files travel between
hosts through a shared store (below), so whoever can write that store must not be able to
run code on every host that reads it (docs/reliability.md#r30-no-code-from-data).

Files in the cache directory are named by content hash, so nothing ever goes stale; but
every distinct set of records leaves files behind. `cleanup` bounds that: a file no current
build uses is deleted once it is older than `MAX_UNUSED_AGE_S` *and* not among the
`KEEP_UNUSED` most recently used ones (a cache hit refreshes a file's mtime). Files are
only ever replaced atomically (`os.replace`), and a loaded file is read whole, so deleting
one under a running process is harmless.

Across hosts the directory is only a cache in front of a `BlobStore` (a protocol: the
database or a Django storage implement it in ``kb.matching.store``, outside this Django-free
package). A host whose directory lacks the matcher file fetches it (`fetch`) instead of
compiling, and a host that compiled one publishes it (`publish`) with its shards, which
its file names rather than holds: they are objects of their own, published first, so a
host that finds the matcher finds them, and a matcher built after an import stores only
its new shard. Stored objects are written once under their digest (the content can only be
the same), so two hosts publishing one digest at once is harmless: the second finds it
there.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import mmap
import os
import sys
import tempfile
import time
from array import array
from collections.abc import Sequence
from functools import lru_cache
from itertools import accumulate, pairwise
from operator import attrgetter
from pathlib import Path
from typing import Any, BinaryIO, ClassVar, Protocol, Self

import hyperscan
import re2

# the engine's version is part of every digest; hyperscan sets it at import, its stub omits it
HYPERSCAN_VERSION: str = hyperscan.__version__  # type: ignore[attr-defined]
MATCHER_FORMAT = "kb-matcher-built-v3"  # the first line of a matcher file (`pack`)
KEEP_UNUSED = 8  # most recently used files kept whatever their age
MAX_UNUSED_AGE_S = 24 * 3600  # unused files older than this (and not among those) go
TMP_AGE_S = 3600  # a temporary file this old is left over from a crashed writer
_PREFIXES = ("shard-", "matcher-")
_LENGTH_BYTES = 8  # the JSON header's length, big-endian, after the format line

log = logging.getLogger(__name__)


@lru_cache(maxsize=1)
def code_digest() -> str:
    """Hash of this package's own source (not the normaliser: nothing of it is stored)."""
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
    # a join, an encode and the lengths per field: C speed however many specs, and no two
    # lists of specs hash alike whatever their text holds
    for field in ("key", "pattern", "message"):
        values = list(map(attrgetter(field), specs))
        h.update(array("Q", map(len, values)).tobytes())
        h.update("\x00".join(values).encode("utf-8", "surrogatepass"))
    # a record's older wordings (aliases) are compiled too, and answered with their ranges
    aliases = [
        f"{s.key}\x01{w.pattern}\x01{w.message}\x01{w.first_release}\x01{w.last_release}"
        for s in specs
        for w in getattr(s, "aliases", ())
    ]
    if aliases:
        h.update(b"\x02" + "\x00".join(aliases).encode("utf-8", "surrogatepass"))
    return h.hexdigest()[:32]


def build_options(shard_size: int | None, with_similarity: bool) -> str:
    """The build options a matcher file's digest covers (one spelling for every caller;
    no shard size is the default layout's)."""
    return f"{shard_size or 'auto'}\x00{with_similarity}"


def matcher_path(cache_dir: Path, digest: str) -> Path:
    return Path(cache_dir) / f"matcher-{digest}.bin"


class BlobStore(Protocol):
    """Bytes under a name, written once, readable by every host (see the module docstring).

    ``get`` streams the named object into ``into`` and says whether it was there (whole and
    intact: an implementation checks what it wrote); ``put`` stores ``source`` under
    ``name`` unless it is there already and says whether it wrote; ``cuts`` are the
    offsets where the file's sections start (`section_starts`), so a store that keeps
    parts by content shares a section two objects hold alike; ``cleanup`` deletes
    objects no name in ``in_use`` needs, bounded as the local directory's clean-up is.
    """

    def get(self, name: str, into: BinaryIO) -> bool: ...

    def put(self, name: str, source: Path, cuts: Sequence[int] = ()) -> bool: ...

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


def publish(store: BlobStore, path: Path, also: Sequence[Path] = ()) -> bool:
    """Store the local file ``path`` for the other hosts (if it is not there already),
    and the files ``also`` names (a matcher's shards: a host building other records
    fetches those it shares instead of compiling them); whether ``path`` was written.
    The shards go first, so a host that finds the matcher finds its shards too."""
    if not path.is_file():
        return False
    wrote_shards = False
    for shard in also:
        if shard.is_file():
            wrote_shards |= store.put(shard.name, shard, section_starts(shard))
    written = store.put(path.name, path, section_starts(path))
    if written or wrote_shards:
        store.cleanup({path.name, *(shard.name for shard in also)})
    return written


def section_starts(path: Path) -> list[int]:
    """The offsets where the byte sections of a file `pack` wrote start, after its header
    (read alone, never the sections); none for a file in no format this code reads.

    Why: a matcher built after an import holds most of the sections of the one before
    alike -- every shard's database, the start of every table -- so a store that cuts its
    parts at these offsets stores those once for both."""
    try:
        with path.open("rb") as fh:
            head = fh.read(256)
            line_end = head.find(b"\n") + 1
            if line_end <= 0 or not head.startswith(b"kb-"):
                return []
            fh.seek(line_end)
            size = int.from_bytes(fh.read(_LENGTH_BYTES), "big")
            if line_end + _LENGTH_BYTES + size > path.stat().st_size:
                return []
            header = json.loads(fh.read(size))
            starts = [line_end + _LENGTH_BYTES + size]
            for n in header["blobs"]:
                starts.append(starts[-1] + int(n))
    except (OSError, ValueError, KeyError, TypeError, RecursionError):
        return []
    return starts[:-1]


def expired(entries: list[tuple[float, str]], in_use: set[str], now: float) -> list[str]:
    """Names to delete among ``(last used, name)`` entries: not in use, not among the
    `KEEP_UNUSED` most recently used, and unused for `MAX_UNUSED_AGE_S` (the local
    directory and the stores share these bounds)."""
    unused = sorted((e for e in entries if e[1] not in in_use), reverse=True)
    return [name for used, name in unused[KEEP_UNUSED:] if now - used > MAX_UNUSED_AGE_S]


class Refused(ValueError):
    """Bytes this code will not load: another format (an older pickle), or damaged."""


# What decoding untrusted plain data into the matcher's objects may raise (Hyperscan and
# RE2 included, which check their own inputs): each is a refusal of the file, not a
# failure of the process.
DECODE_ERRORS: tuple[type[Exception], ...] = (
    KeyError,
    TypeError,
    ValueError,
    IndexError,
    AttributeError,
    OverflowError,
    hyperscan.error,
    re2.error,
)


def pack(fmt: str, plain: dict[str, Any], blobs: Sequence[bytes]) -> bytes:
    """``plain`` (JSON-able) and ``blobs`` as one byte string in the format ``fmt``."""
    return b"".join([_head(fmt, plain, blobs), *blobs])


def _head(fmt: str, plain: dict[str, Any], blobs: Sequence[bytes]) -> bytes:
    """What comes before the byte sections: the format line and the JSON header."""
    header = json.dumps(
        {"byteorder": sys.byteorder, "blobs": [len(b) for b in blobs], "data": plain},
        separators=(",", ":"),
    ).encode()
    return f"{fmt}\n".encode() + len(header).to_bytes(_LENGTH_BYTES, "big") + header


def unpack(fmt: str, data: bytes | mmap.mmap) -> tuple[dict[str, Any], list[memoryview]]:
    """The plain data and byte sections `pack` wrote; `Refused` for anything else.

    Only JSON is parsed and only counted slices are cut: nothing in ``data`` can choose
    a type, call a function or reach outside the buffer."""
    line = f"{fmt}\n".encode()
    if data[: len(line)] != line:  # a slice: ``data`` may be a mapped file
        first = bytes(data[:40]).split(b"\n", 1)[0]
        raise Refused(f"not a {fmt} file (starts {first[:24]!r})")
    at = len(line) + _LENGTH_BYTES
    size = int.from_bytes(data[len(line) : at], "big")
    if at + size > len(data):
        raise Refused("truncated header")
    try:
        header = json.loads(bytes(data[at : at + size]))
    except (ValueError, RecursionError) as exc:
        raise Refused(f"unreadable header: {exc}") from None
    if not isinstance(header, dict) or not isinstance(header.get("data"), dict):
        raise Refused("header is not an object with data")
    lengths = header.get("blobs")
    if not isinstance(lengths, list) or not all(type(n) is int and n >= 0 for n in lengths):
        raise Refused("bad section lengths")
    if header.get("byteorder") != sys.byteorder:
        raise Refused(f"written on a {header.get('byteorder')}-endian machine")
    at += size
    if at + sum(lengths) != len(data):
        raise Refused("sections do not add up to the file's size")
    view = memoryview(data)
    blobs = []
    for n in lengths:
        blobs.append(view[at : at + n])
        at += n
    return header["data"], blobs


class Serialised:
    """``dumps``/``loads`` in the file format above, for the matcher's own objects: a
    class says how it is plain data (``to_plain``, appending its byte sections to
    ``blobs`` and naming them by index) and how it is rebuilt from that (``from_plain``,
    which checks what it reads: the bytes may come from another host)."""

    __slots__ = ()
    FORMAT: ClassVar[str]

    def to_plain(self, blobs: list[bytes]) -> dict[str, Any]:
        raise NotImplementedError

    @classmethod
    def from_plain(cls, plain: dict[str, Any], blobs: Sequence[memoryview]) -> Self:
        raise NotImplementedError

    def dumps(self) -> bytes:
        blobs: list[bytes] = []
        plain = self.to_plain(blobs)
        return pack(self.FORMAT, plain, blobs)

    @classmethod
    def loads(cls, data: bytes) -> Self:
        """The object ``data`` holds; `Refused` when it is not one this code wrote."""
        plain, blobs = unpack(cls.FORMAT, data)
        try:
            return cls.from_plain(plain, blobs)
        except DECODE_ERRORS as exc:
            raise Refused(f"{type(exc).__name__}: {exc}") from None


# Writers and readers of the byte sections a `Serialised` object is made of. Long lists
# go to sections, not into the JSON header: one split or one array read at C speed, and
# what comes back has its type by construction (a string split yields strings), so a
# large matcher loads mostly at C speed and is checked as it is read.


def section(ref: Any, blobs: Sequence[memoryview]) -> memoryview:
    """The byte section numbered ``ref``."""
    if type(ref) is not int or not 0 <= ref < len(blobs):
        raise ValueError(f"no byte section {ref!r}")
    return blobs[ref]


def put_texts(values: Sequence[str], blobs: list[bytes]) -> dict[str, Any]:
    """A list of strings: one section joined by NUL, or a JSON list when one holds NUL."""
    joined = "\x00".join(values)
    if values and joined.count("\x00") != len(values) - 1:
        return {"n": len(values), "list": list(values)}
    blobs.append(joined.encode("utf-8", "surrogatepass"))
    return {"n": len(values), "at": len(blobs) - 1}


def get_texts(ref: Any, blobs: Sequence[memoryview]) -> list[str]:
    """What `put_texts` wrote: a list of exactly ``n`` strings, or ValueError/TypeError."""
    n = ref["n"]
    if "list" in ref:
        values = ref["list"]
        if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
            raise TypeError("expected a list of strings")
    else:
        text = str(section(ref["at"], blobs), "utf-8", "surrogatepass")
        values = text.split("\x00") if n else []
    if len(values) != n:
        raise ValueError(f"{len(values)} strings, {n} expected")
    return values


def put_groups(groups: Sequence[Sequence[str]], blobs: list[bytes]) -> dict[str, Any]:
    """A list of lists of strings: the strings in a row, and the size of each list."""
    sizes = array("I", map(len, groups))
    return {
        "texts": put_texts([v for g in groups for v in g], blobs),
        "sizes": put_table(sizes, blobs),
    }


def get_groups(ref: Any, blobs: Sequence[memoryview]) -> list[list[str]]:
    """What `put_groups` wrote (fresh lists)."""
    flat = get_texts(ref["texts"], blobs)
    sizes = get_table(ref["sizes"], "I", blobs)
    if sum(sizes) != len(flat):
        raise ValueError("group sizes do not add up")
    return [flat[a:b] for a, b in pairwise(accumulate(sizes, initial=0))]


def put_bytes(value: bytes, blobs: list[bytes]) -> int:
    """Bytes as a section (read back with `section`)."""
    blobs.append(value)
    return len(blobs) - 1


def put_table(values: array, blobs: list[bytes]) -> int:
    """A numeric ``array`` as a section (the reader names its type)."""
    blobs.append(values.tobytes())
    return len(blobs) - 1


def get_table(ref: Any, typecode: str, blobs: Sequence[memoryview]) -> array:
    """A numeric ``array`` from a section (its type is the reader's, never the file's)."""
    out = array(typecode)
    out.frombytes(section(ref, blobs))  # ValueError unless a whole number of items
    return out


def get_indexes(ref: Any, bound: int, blobs: Sequence[memoryview]) -> list[int]:
    """A list of integers below ``bound`` from an ``"I"`` section."""
    values = get_table(ref, "I", blobs)
    if values and max(values) >= bound:
        raise ValueError(f"an index past {bound}")
    return values.tolist()


def load[T: Serialised](path: Path, kind: type[T]) -> T | None:
    """The ``kind`` stored at ``path``, or None: missing, or refused with a log line
    (another format, such as an older pickle, or damaged); the caller builds instead."""
    try:
        data = path.read_bytes()
    except OSError:
        return None
    try:
        obj = kind.loads(data)
    except Refused as exc:
        log.warning("cache file %s refused, rebuilding: %s", path, exc)
        return None
    touch(path)
    return obj


def save(path: Path, obj: Serialised) -> None:
    """Write ``obj`` to ``path`` atomically (concurrent workers never see half a file).

    Section by section, as `pack` lays them out, not joined first: a matcher's file is
    hundreds of megabytes, which joining would copy once more in memory."""
    blobs: list[bytes] = []
    plain = obj.to_plain(blobs)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".tmp-{path.name.split('-')[0]}-")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(_head(obj.FORMAT, plain, blobs))
            for blob in blobs:
                fh.write(blob)
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
