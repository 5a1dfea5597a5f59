"""The Matcher: every record's pattern at once, in linear time, explained.

One `Matcher` holds the compiled shards (Hyperscan databases, see `shards.py`) of all
admitted patterns, a small delta shard for edits made since the build, and the record
keys behind each pattern (records with an identical pattern share one compiled entry).

`match` normalises the paste, scans the whole normalised text once per shard (ids only),
confirms each hit with the `regex` package on a bounded window around the hit's line and
with a timeout (Python's backtracking `re` never touches user text; `candidates.py`), then
hands the confirmed candidates to `rank.py`. Nothing here imports Django.

A record's older wordings (`PatternSpec.aliases`) are compiled as patterns of their own
whose keys are the record's: a match on one answers with the record and says which
wording it read (`Match.wording`). A record key therefore has one pattern of its own
(`_key_pid`) and maybe several alias patterns (`_aliases`: pattern id -> key -> wording).
"""

from __future__ import annotations

import ctypes
import gc
import logging
import mmap
import os
import re
import threading
import time
import zlib
from collections import ChainMap
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any, ClassVar

import hyperscan

from . import cache
from .candidates import (
    CONFIRM_BUDGET_S,
    CONFIRM_LINES_PER_PATTERN,
    CONFIRM_TIMEOUT_S,
    WINDOW_EXTRA_LINES,
    WINDOW_MAX_CHARS,
    confirm_hits,
    fallback,
    start_word,
)
from .evidence import (
    Context,
    FactsOf,
    Weighed,
    judge,
    longest_literal,
    quoted_raises,
    read_context,
)
from .logstream import WHOLE_LOG_CHARS, Excerpt, match_excerpt, read_excerpt
from .normalise import normalise, normalise_excerpt, normalise_log
from .patterns import Analysis, analyse
from .rank import Candidate, rank
from .releases import ReleasesOf, place
from .report import build_report
from .shards import (
    Fetch,
    Hits,
    Shard,
    ShardData,
    compile_shard,
    layout,
    lines_database,
    load_or_compile,
    load_or_compile_all,
    shard_digest,
    target_size,
)
from .similar import SimilarityIndex
from .suggest import EditedSimilarity, similar_from_plain, similar_to_plain, similarity_index
from .textmap import HitLine, locate_lines
from .types import Admission, Engine, MatchReport, PasteTooLarge, PatternSpec, ReleaseFit, Wording

__all__ = [  # the confirm tunables live in `candidates.py`; still importable from here
    "BIG_TEXT_CHARS",
    "CONFIRM_BUDGET_S",
    "CONFIRM_LINES_PER_PATTERN",
    "CONFIRM_TIMEOUT_S",
    "WINDOW_EXTRA_LINES",
    "WINDOW_MAX_CHARS",
    "Matcher",
]

BIG_TEXT_CHARS = 1_000_000  # from here the paste is encoded once, before normalising
# A whole log's lines are found by one database of the patterns' line literals
# (`shards.lines_database`), compiled when a matcher reads its first whole log: at most
# this many patterns, past which that compile would hold up the first log too long (the
# shards' own scan finds the lines then).
LINES_DATABASE_MAX_PATTERNS = 65_536

log = logging.getLogger(__name__)


def _trim_heap() -> None:
    """Give the C heap's free pages back to the system (glibc's ``malloc_trim``; nothing
    elsewhere): a compile frees most of what it used, which the heap would keep for good."""
    with suppress(AttributeError, OSError):
        ctypes.CDLL(None).malloc_trim(0)


ALIAS_MARK = "\x1f"  # joins a record key and an alias pattern: the alias's key in the
# similarity index (record ids never hold it)


def alias_entry(key: str, pattern: str) -> str:
    """The similarity index's key for the older wording ``pattern`` of record ``key``."""
    return f"{key}{ALIAS_MARK}{pattern}"


def _shard_of(pattern: str, n_shards: int) -> int:
    """Stable shard of a pattern (crc32: the same in every process and release)."""
    return zlib.crc32(pattern.encode("utf-8", "surrogatepass")) % n_shards


def _cores() -> int:
    """The machine's cores (a full build compiles on all of them)."""
    return os.cpu_count() or 1


def _resumed_similarity(path: Path, items: list[tuple[str, str]]) -> SimilarityIndex | None:
    """The similarity index of the matcher its cache directory used last (built or
    loaded: the most recent file), carried on over ``items`` when it was built from their
    start (`SimilarityIndex.resumed`), or None. Its sections alone are read, from the
    file mapped, not the whole matcher: a build after an import then indexes the new
    records' messages instead of every message again."""
    try:
        files = [(f.stat().st_mtime, f) for f in path.parent.glob("matcher-*.bin") if f != path]
        if not files:
            return None
        with max(files)[1].open("rb") as fh:
            data = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
        plain, blobs = cache.unpack(Matcher.FORMAT, data)
        return SimilarityIndex.resumed(plain["similar"]["index"], blobs, items)
    except (OSError, *cache.DECODE_ERRORS):  # type: ignore[misc]  # a tuple of classes
        return None  # no last index to carry on, or none this code reads: built anew


@contextmanager
def gc_paused() -> Iterator[None]:
    """The cyclic garbage collector off for a block that allocates millions of long-lived
    objects and no cycles (a full build: the specs, the tables, the similarity index): its
    passes would walk them all again and again for nothing. Reference counting still
    frees what is dropped; the collector is back on (if it was) afterwards."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


_SHARD_FILE = re.compile(r"shard-[0-9a-f]{32}\.bin")  # a name `Matcher.shard_files` gives


class _NoShard(Exception):
    """A shard a matcher's cache file names is neither in the cache nor in the store."""


class _BuiltFile(cache.Serialised):
    """A full build as its cache file: the matcher with its shards named by their files,
    not held again. The shards are files of the same directory already (and objects of
    the store beside the matcher's, published first), so the matcher's own file holds
    what only it has: saving and publishing a build after an import writes its new
    shard once, not every shard again."""

    FORMAT: ClassVar[str] = cache.MATCHER_FORMAT
    __slots__ = ("matcher",)

    def __init__(self, matcher: Matcher) -> None:
        self.matcher = matcher

    def to_plain(self, blobs: list[bytes]) -> dict[str, Any]:
        return self.matcher.to_plain(blobs, shard_files=True)


# A build statistic: a count, a duration in seconds, or a flag (where the matcher came from).
Stat = int | float | bool


class _LinesDatabase:
    """`shards.lines_database` of a build's shards, compiled by the first whole log a
    matcher holding them reads (none past `LINES_DATABASE_MAX_PATTERNS`, or when it does
    not compile: the shards' own scan finds the lines then), with each thread's scratch."""

    def __init__(self, shards: list[Shard]) -> None:
        self._shards = shards
        self.size = sum(len(sh.data.patterns) for sh in shards)  # their patterns' ids: below
        self._db: hyperscan.Database | None = None
        self._tried = False
        self._lock = threading.Lock()
        self._local = threading.local()

    def find(self, data: bytes, hits: Hits) -> bool:
        """Add the database's hits in ``data`` to ``hits``; False when there is none."""
        db = self._database()
        if db is None:
            return False
        scratch = getattr(self._local, "scratch", None)
        if scratch is None:
            scratch = self._local.scratch = hyperscan.Scratch(db)
        pid, end, head = hits.pids.append, hits.ends.append, hits.heads.append

        def on_match(hid: int, _frm: int, to: int, _flags: int, _ctx: object) -> None:
            pid(hid)
            end(to)
            head(0)

        db.scan(data, match_event_handler=on_match, scratch=scratch)
        return True

    def found_any(self) -> bool:
        """Whether `find` has found the lines of a log by the line literals."""
        return self._tried and self._db is not None

    def _database(self) -> hyperscan.Database | None:
        if not self._tried:
            with self._lock:
                if not self._tried:
                    if self.size <= LINES_DATABASE_MAX_PATTERNS:
                        try:
                            self._db = lines_database(self._shards)
                        except hyperscan.error as exc:
                            log.warning("line literals not compiled, scanning instead: %s", exc)
                        _trim_heap()  # what the compile used
                    self._tried = True
        return self._db


class Matcher(cache.Serialised):
    """Compiled patterns of all records, plus the keys behind each pattern."""

    FORMAT: ClassVar[str] = cache.MATCHER_FORMAT

    #: Order a whole log's groups by what to read first (`rootcause`); off only for the
    #: benchmark's baseline of the same run.
    root_cause_order: bool = True
    #: Match a whole log (past `WHOLE_LOG_CHARS`) from the excerpt of its lines that matter
    #: (`logstream`), as a log read in blocks is: the passes after the scan then read that,
    #: not the whole log. Off only for the tests and the benchmark that compare the two.
    excerpt_logs: bool = True

    def __init__(
        self,
        shards: list[Shard],
        keys: list[list[str]],
        messages: dict[str, str],
        delta: Shard | None = None,
        similar: object | None = None,
        stats: dict[str, Stat] | None = None,
        cache_dir: Path | None = None,
        *,
        _key_pid: dict[str, int] | None = None,
        _base_patterns: list[str] | None = None,
        _base_pid: dict[str, int] | None = None,
        aliases: dict[int, dict[str, Wording]] | None = None,
        _lines: _LinesDatabase | None = None,
    ) -> None:
        self._shards = shards
        self._delta = delta
        if _base_patterns is not None:
            self._patterns = _base_patterns
            if delta is not None:
                self._patterns.extend(delta.data.patterns)
        else:
            self._patterns = []
            for sh in shards:
                self._patterns.extend(sh.data.patterns)
            if delta is not None:
                self._patterns.extend(delta.data.patterns)
        self._keys = keys  # global pattern id -> record keys (empty: tombstone)
        self._messages = messages
        self._similar = similar
        self._analyses: dict[int, Analysis] = {}
        self._base_pid = _base_pid
        self._aliases: dict[int, dict[str, Wording]] = aliases or {}
        if _key_pid is None:
            held = self._aliases
            _key_pid = {
                k: pid
                for pid, ks in enumerate(keys)
                for k in ks
                if pid not in held or k not in held[pid]
            }
        self._key_pid = _key_pid
        self._refused: dict[int, tuple[str, bool]] = {}
        for sh in [*shards, *([delta] if delta else [])]:
            for local, why in sh.data.refused.items():
                self._refused[sh.base + local] = why
        self._alias_pid: dict[str, int] | None = None  # alias_entry -> pattern id, lazily
        self._re2_ids = {
            sh.base + i for sh in [*shards, *([delta] if delta else [])] for i in sh.data.re2_local
        }
        self.stats: dict[str, Stat] = dict(stats or {})
        self._cache_dir = cache_dir
        self._shard_names: list[str] | None = None  # `shard_files`, once asked
        # the line literals of `shards`, shared with the matchers made from this one by
        # `with_changes` (the same shards, and a delta found by its own scan)
        self._lines = _lines if _lines is not None else _LinesDatabase(shards)

    # ------------------------------------------------------------------ building
    @classmethod
    def build(
        cls,
        specs: Iterable[PatternSpec],
        *,
        cache_dir: Path | None = None,
        shard_size: int | None = None,
        with_similarity: bool = True,
        workers: int | None = None,
        fetch: Fetch | None = None,
        digest: str | None = None,
    ) -> Matcher:
        """Compile (or load from `cache_dir`) one database per shard of the patterns.

        The specs' order is the layout's (`shards.layout`): give them oldest first, so
        that the records added since the last build fall into the last shards and the
        others load from the cache. `shard_size` is the patterns a shard aims at (by
        default `shards.target_size` of the set). The shards the cache lacks are asked of
        `fetch` (another host may have compiled them), and the rest compiled on `workers`
        threads (by default every core). `digest` is the specs' `cache.specs_digest` when
        the caller has it already (hashing a million specs is not free).
        """
        with gc_paused():
            return cls._build(specs, cache_dir, shard_size, with_similarity, workers, fetch, digest)

    @classmethod
    def _build(
        cls,
        specs: Iterable[PatternSpec],
        cache_dir: Path | None,
        shard_size: int | None,
        with_similarity: bool,
        workers: int | None,
        fetch: Fetch | None,
        digest: str | None,
    ) -> Matcher:
        t0 = time.perf_counter()
        specs = specs if isinstance(specs, list) else list(specs)
        path = None
        if cache_dir is not None:  # the whole built matcher, under the hash of its inputs
            options = cache.build_options(shard_size, with_similarity)
            digest = digest or cache.specs_digest(specs, options)
            path = cache.matcher_path(cache_dir, digest)
            hit = cls.load(path, fetch)
            if hit is not None:
                hit._cache_dir = cache_dir  # this host's directory, whoever wrote the file
                hit.stats.update(
                    shards_from_cache=hit.stats.get("shards", 0),
                    shards_fetched=0,
                    shards_compiled=0,
                    patterns_compiled=0,
                    compile_s=0.0,
                    matcher_from_cache=True,
                    build_s=round(time.perf_counter() - t0, 3),
                )
                return hit
        by_pattern: dict[str, list[str]] = {}  # in the order of the specs: oldest first
        batch_of: dict[str, int] = {}  # a pattern's batch: its first record's
        messages: dict[str, str] = {}
        for s in specs:
            by_pattern.setdefault(s.pattern, []).append(s.key)
            batch_of.setdefault(s.pattern, s.batch)
            messages[s.key] = s.message
        # aliases after every record's own pattern: a pattern's current keys come first
        alias_of: dict[str, dict[str, Wording]] = {}
        for s in (s for s in specs if s.aliases):
            for w in s.alias_list():
                ks = by_pattern.setdefault(w.pattern, [])
                batch_of.setdefault(w.pattern, s.batch)
                if s.key not in ks:
                    ks.append(s.key)
                    alias_of.setdefault(w.pattern, {})[s.key] = w
        target = shard_size or target_size(len(by_pattern))
        runs = layout(list(by_pattern), target, [batch_of[p] for p in by_pattern])
        analyses: dict[str, Analysis] = {}
        resumed: list[SimilarityIndex] = []

        def similarity() -> tuple[object | None, float]:
            """The similarity index, with older wordings too (a cut-off or reworded old
            paste is found), and the seconds it took."""
            t = time.perf_counter()
            olds = {
                alias_entry(k, w.pattern): w.message
                for by_key in alias_of.values()
                for k, w in by_key.items()
            }

            def resume(items: list[tuple[str, str]]) -> SimilarityIndex | None:
                index = None if path is None else _resumed_similarity(path, items)
                resumed.extend([index] if index is not None else [])
                return index

            index = similarity_index({**messages, **olds} if olds else messages, resume=resume)
            return index, time.perf_counter() - t

        # The index is Python work and the shards' compiles are Hyperscan's, which releases
        # the GIL: the index is built in a thread of its own meanwhile.
        with ThreadPoolExecutor(max_workers=1) as pool:
            indexing = pool.submit(similarity) if with_similarity else None
            loaded = load_or_compile_all(
                runs, analyses, cache_dir, workers=workers or _cores(), fetch=fetch
            )
            similar, t_similar = indexing.result() if indexing is not None else (None, 0.0)
        shards: list[Shard] = []
        keys: list[list[str]] = []
        aliases: dict[int, dict[str, Wording]] = {}
        for data in loaded.shards:
            shards.append(Shard(data, len(keys)))
            if alias_of:
                for local, p in enumerate(data.patterns):
                    if p in alias_of:
                        aliases[len(keys) + local] = alias_of[p]
            keys.extend(map(by_pattern.__getitem__, data.patterns))  # fresh lists, owned here
        stats: dict[str, Stat] = {
            "patterns": len(by_pattern),
            "records": len(messages),
            "shards": len(shards),
            "shards_from_cache": loaded.from_cache,
            "shards_fetched": loaded.fetched,
            "shards_compiled": loaded.compiled,
            "patterns_compiled": loaded.patterns_compiled,
            "shard_target": target,
            "compile_s": round(loaded.compile_s, 3),
            "similarity_s": round(t_similar, 3),
            # the last build's index carried on over the new records (`_resumed_similarity`)
            "similarity_resumed": bool(resumed),
            "build_s": round(time.perf_counter() - t0, 3),
            "serialised_bytes": sum(len(s.data.hs_bytes or b"") for s in shards),
            "aliases": sum(map(len, aliases.values())),
        }
        built = cls(shards, keys, messages, None, similar, stats, cache_dir, aliases=aliases)
        built.stats["aliases_refused"] = sum(map(len, built.refused_aliases().values()))
        if path is not None and cache_dir is not None:
            try:
                cache.save(path, _BuiltFile(built))
                cache.cleanup(Path(cache_dir), {path.name, *loaded.names})
            except OSError:
                pass  # a read-only or full cache directory costs speed, not correctness
        built.stats["build_s"] = round(time.perf_counter() - t0, 3)
        return built

    def with_changes(self, changed: Iterable[PatternSpec], removed: Iterable[str]) -> Matcher:
        """A new matcher: this one's shards, minus `removed`/changed keys, plus a delta.

        Only the delta (the patterns edited since the full build) is compiled, so an
        edit reaches matching without recompiling a shard; the large tables are shared with this
        matcher (copied at C speed, entries replaced, never mutated in place). The
        original matcher is not modified.
        """
        t0 = time.perf_counter()
        changed = list(changed)
        drop = set(removed) | {s.key for s in changed}
        n_base = sum(len(s.data.patterns) for s in self._shards)
        keys = self._keys[:n_base]  # a new list of the same (shared) per-pattern lists
        key_pid = self._key_pid.copy()
        aliases = {pid: by_key for pid, by_key in self._aliases.items() if pid < n_base}
        delta_keys: dict[str, list[str]] = {}
        delta_aliases: dict[str, dict[str, Wording]] = {}
        if self._delta is not None:
            for local, p in enumerate(self._delta.data.patterns):
                live = [k for k in self._keys[n_base + local] if k not in drop]
                if live:
                    delta_keys[p] = live
                    held = self._aliases.get(n_base + local, {})
                    kept = {k: w for k, w in held.items() if k not in drop}
                    if kept:
                        delta_aliases[p] = kept
        alias_pids = self._alias_pids()
        for k in drop:
            pid = key_pid.pop(k, None)
            for apid in alias_pids.get(k, ()):
                if apid < n_base:
                    keys[apid] = [x for x in keys[apid] if x != k]
                    left = {x: w for x, w in aliases[apid].items() if x != k}
                    if left:
                        aliases[apid] = left
                    else:
                        del aliases[apid]
            if pid is not None and pid < n_base:
                keys[pid] = [x for x in keys[pid] if x not in drop]
        messages = self._messages.copy()
        for k in drop:
            messages.pop(k, None)
        base_pid = self._base_pattern_pid()
        for spec in changed:
            messages[spec.key] = spec.message
            pid = base_pid.get(spec.pattern)
            if pid is not None:  # a current key goes before the pattern's alias keys
                held = aliases.get(pid, {})
                cur = [k for k in keys[pid] if k not in held]
                keys[pid] = [*cur, spec.key, *(k for k in keys[pid] if k in held)]
                key_pid[spec.key] = pid
            else:
                ks = delta_keys.setdefault(spec.pattern, [])
                held = delta_aliases.get(spec.pattern, {})
                at = next((i for i, k in enumerate(ks) if k in held), len(ks))
                ks.insert(at, spec.key)
        for spec in changed:
            for w in spec.alias_list():
                pid = base_pid.get(w.pattern)
                if pid is not None:
                    if spec.key not in keys[pid]:
                        keys[pid] = [*keys[pid], spec.key]
                        aliases[pid] = {**aliases.get(pid, {}), spec.key: w}
                else:
                    ks = delta_keys.setdefault(w.pattern, [])
                    if spec.key not in ks:
                        ks.append(spec.key)
                        delta_aliases.setdefault(w.pattern, {})[spec.key] = w
        delta = None
        if delta_keys:
            pats = sorted(delta_keys)
            if self._cache_dir is not None:
                data, _ = load_or_compile(pats, {}, self._cache_dir)
            else:
                data = compile_shard(pats, {})
            delta = Shard(data, n_base)
            for i, p in enumerate(pats):
                keys.append(delta_keys[p])
                held = delta_aliases.get(p, {})
                if held:
                    aliases[n_base + i] = held
                for k in delta_keys[p]:
                    if k not in held:
                        key_pid[k] = n_base + i
        edited = {s.key: s.message for s in changed}
        for s in changed:
            for w in s.alias_list():
                edited[alias_entry(s.key, w.pattern)] = w.message
        similar = EditedSimilarity.apply(self._similar, edited, set(removed))
        stats = dict(self.stats)
        stats["delta_patterns"] = len(delta_keys)
        stats["with_changes_s"] = round(time.perf_counter() - t0, 4)
        new = Matcher(
            self._shards, keys, messages, delta, similar, stats, self._cache_dir,
            _key_pid=key_pid, _base_patterns=self._patterns[:n_base], _base_pid=base_pid,
            aliases=aliases, _lines=self._lines,
        )  # fmt: skip
        return new

    def _alias_pids(self) -> dict[str, list[int]]:
        """record key -> the pattern ids of its aliases."""
        out: dict[str, list[int]] = {}
        for pid, by_key in self._aliases.items():
            for k in by_key:
                out.setdefault(k, []).append(pid)
        return out

    def wording(self, pid: int, key: str) -> Wording | None:
        """The older wording of ``key`` that pattern ``pid`` is, or None (its own)."""
        held = self._aliases.get(pid)
        return None if held is None else held.get(key)

    def _entry_pid(self) -> Mapping[str, int]:
        """Record keys and older wordings' similarity entries -> their pattern ids."""
        if not self._aliases:
            return self._key_pid
        if self._alias_pid is None:
            self._alias_pid = {
                alias_entry(k, self._patterns[pid]): pid
                for pid, by_key in self._aliases.items()
                for k in by_key
            }
        return ChainMap(self._key_pid, self._alias_pid)

    def _alias_only(self, pid: int) -> bool:
        held = self._aliases.get(pid)
        return held is not None and all(k in held for k in self._keys[pid])

    def shard_files(self) -> list[str]:
        """The cache file names of the full build's shards (what a host publishes beside
        the matcher file, so another host with other records fetches instead of
        compiling what they have in common)."""
        if self._shard_names is None:  # hashed once: its file and the publish both ask
            self._shard_names = [
                f"shard-{shard_digest(sh.data.patterns)}.bin" for sh in self._shards
            ]
        return self._shard_names

    def _base_pattern_pid(self) -> dict[str, int]:
        """pattern -> id over the base shards (built once, shared by derived matchers)."""
        if self._base_pid is None:
            n_base = sum(len(s.data.patterns) for s in self._shards)
            self._base_pid = dict(zip(self._patterns[:n_base], range(n_base), strict=True))
        return self._base_pid

    def to_plain(self, blobs: list[bytes], *, shard_files: bool = False) -> dict[str, Any]:
        """The matcher as plain data; with ``shard_files``, its full build's shards named by
        their cache files (`_BuiltFile`), not held."""
        return {
            "shards": [
                [sh.base, {"file": name}]
                for sh, name in zip(self._shards, self.shard_files(), strict=True)
            ]
            if shard_files
            else [[sh.base, sh.data.to_plain(blobs)] for sh in self._shards],
            "delta": None if self._delta is None else self._delta.data.to_plain(blobs),
            "keys": cache.put_groups(self._keys, blobs),
            "records": cache.put_texts(list(self._messages), blobs),
            "messages": cache.put_texts(list(self._messages.values()), blobs),
            "similar": similar_to_plain(self._similar, blobs),
            "stats": self.stats,
            "aliases": [
                [pid, k, w.message, w.first_release, w.last_release]
                for pid, by_key in self._aliases.items()
                for k, w in by_key.items()
            ],
        }

    @classmethod
    def from_plain(
        cls,
        plain: dict[str, Any],
        blobs: Sequence[memoryview],
        shard_file: Callable[[str], ShardData] | None = None,
    ) -> Matcher:
        """The matcher `to_plain` described, its layout checked so that a scan can only
        name patterns and keys it holds (the bytes may come from another host); a shard
        named by its file is read by ``shard_file`` (`Matcher.load`)."""
        shards: list[Shard] = []
        n = 0
        for base, data in plain["shards"]:
            if base != n:
                raise ValueError(f"shard at {base}, expected {n}")
            if "file" in data:
                if shard_file is None:
                    raise ValueError("a shard held in a file of its own, and no files")
                shard = shard_file(str(data["file"]))
            else:
                shard = ShardData.from_plain(data, blobs)
            shards.append(Shard(shard, base))
            n += len(shard.patterns)
        delta = None
        if plain["delta"] is not None:
            delta = Shard(ShardData.from_plain(plain["delta"], blobs), n)
            n += len(delta.data.patterns)
        keys = cache.get_groups(plain["keys"], blobs)
        if len(keys) != n:
            raise ValueError(f"keys for {len(keys)} patterns, {n} held")
        records = cache.get_texts(plain["records"], blobs)
        messages = dict(zip(records, cache.get_texts(plain["messages"], blobs), strict=True))
        stats = plain["stats"]
        if not isinstance(stats, dict) or not all(
            isinstance(v, int | float) for v in stats.values()
        ):
            raise TypeError("stats are not numbers by name")
        similar = similar_from_plain(plain["similar"], blobs)
        patterns = [p for sh in shards for p in sh.data.patterns]
        if delta is not None:
            patterns.extend(delta.data.patterns)
        aliases: dict[int, dict[str, Wording]] = {}
        names: dict[str, str] = {}  # one string per release name, however many aliases
        for pid, k, message, first, last in plain.get("aliases", []):
            if type(pid) is not int or not 0 <= pid < n or k not in keys[pid]:
                raise ValueError(f"alias {pid!r} of {k!r} out of range")
            key = keys[pid][keys[pid].index(k)]  # the key string the pattern holds already
            first = names.setdefault(str(first), str(first))
            last = names.setdefault(str(last), str(last))
            aliases.setdefault(pid, {})[key] = Wording(patterns[pid], str(message), first, last)
        return cls(shards, keys, messages, delta, similar, stats, aliases=aliases)

    @classmethod
    def load(cls, path: Path, fetch: Fetch | None = None) -> Matcher | None:
        """The full build the cache file ``path`` holds (`_BuiltFile`), with its shards
        read from their files beside it -- fetched (``fetch``) when this host lacks them;
        None when there is no such file, a shard cannot be had, or the file is refused
        (with a log line: another format, or damaged). The caller builds instead."""
        try:
            data = path.read_bytes()
        except OSError:
            return None

        def shard_file(name: str) -> ShardData:
            if not _SHARD_FILE.fullmatch(name):
                raise ValueError(f"not a shard file name: {name[:80]!r}")
            shard = path.parent / name
            got = cache.load(shard, ShardData)
            if got is None and fetch is not None and fetch(shard):
                got = cache.load(shard, ShardData)
            if got is None:
                raise _NoShard(name)
            if f"shard-{shard_digest(got.patterns)}.bin" != name:
                raise ValueError(f"{name} holds other patterns")
            return got

        try:
            plain, blobs = cache.unpack(cls.FORMAT, data)
            built = cls.from_plain(plain, blobs, shard_file)
        except _NoShard as gone:
            log.info("cache file %s: its shard %s is gone, building again", path, gone)
            return None
        except cache.DECODE_ERRORS as exc:  # Refused among them
            log.warning("cache file %s refused, rebuilding: %s", path, exc)
            return None
        cache.touch(path)
        return built

    # ------------------------------------------------------------------ introspection
    def __len__(self) -> int:
        """Record keys held (refused patterns included: their records are known)."""
        return len(self._key_pid)

    def __contains__(self, key: object) -> bool:
        return key in self._key_pid

    def keys(self) -> frozenset[str]:
        """Every record key this matcher holds, so a caller can tell by key, not by a
        count, which records it still matches."""
        return frozenset(self._key_pid)

    def _analysis(self, pid: int) -> Analysis:
        a = self._analyses.get(pid)
        if a is None:
            a = analyse(self._patterns[pid])
            self._analyses[pid] = a
        return a

    def admission(self, key: str) -> Admission:
        """How the record's pattern was admitted (engine, specificity) or why refused."""
        pid = self._key_pid[key]
        if pid in self._refused:
            reason, generic = self._refused[pid]
            return Admission(False, None, reason, generic, 0.0)
        a = self._analysis(pid)
        engine: Engine = "re2" if pid in self._re2_ids else "hyperscan"
        return Admission(True, engine, None, a.generic, float(a.literal_chars))

    def refused(self) -> dict[str, str]:
        """Record key -> reason, for every record whose pattern no engine accepted."""
        return {
            k: why
            for pid, (why, _) in self._refused.items()
            for k in self._keys[pid]
            if k not in self._aliases.get(pid, ())
        }

    def refused_aliases(self) -> dict[str, list[tuple[str, str]]]:
        """Record key -> (alias pattern, reason) for each older wording no engine
        accepted: left out of matching, the record's own pattern unaffected."""
        out: dict[str, list[tuple[str, str]]] = {}
        for pid, (why, _) in self._refused.items():
            for k in self._aliases.get(pid, ()):
                out.setdefault(k, []).append((self._patterns[pid], why))
        return out

    # ------------------------------------------------------------------ matching
    def match(
        self,
        text: str | bytes | Excerpt,
        *,
        max_bytes: int | None = None,
        facts: FactsOf | None = None,
        repos: Collection[str] = (),
        releases: ReleasesOf | None = None,
    ) -> MatchReport:
        """Every known error of ``text``. ``facts`` (record keys -> `RecordFacts`) lets
        the paste's own context (frames, exception classes, quoted source lines) choose
        between records read on the same text; ``repos`` are every repository the records
        come from, so that frames pointing at another one can be told from frames of the
        user's own code; ``releases`` (record keys -> `releases.ReleaseFacts`) lets the
        paste's frames and version strings say which release printed it. ``text`` may be
        the `Excerpt` of a bigger log (`logstream`, which maps the spans back): it is
        normalised as that log would be, from the UTF-8 and the regions the excerpt holds
        (taken from it, not encoded or planned again). Bytes are read as UTF-8 (a byte
        that is not, as U+FFFD): a whole log's lines are picked from them as they are,
        never decoded whole."""
        t0 = time.perf_counter()
        excerpt = None
        planned = False  # a whole log's excerpt made, and found dense: read in one go
        if isinstance(text, bytes):
            if max_bytes is not None and len(text) > max_bytes:
                raise PasteTooLarge(len(text), max_bytes)
            max_bytes = None
            # a character is at most 4 bytes (a byte that is not UTF-8, one): so a head
            # this long tells whether the text is a whole log
            head = text[: 4 * WHOLE_LOG_CHARS + 4] if len(text) > WHOLE_LOG_CHARS else b""
            if self.excerpt_logs and len(head.decode("utf-8", "replace")) > WHOLE_LOG_CHARS:
                got = self._from_excerpt(text, t0, facts, repos, releases)
                if got is not None:
                    return got
                planned = True
            text = text.decode("utf-8", "replace")
        if isinstance(text, Excerpt):  # matched from its bytes (`normalise_excerpt`)
            excerpt, text = text, ""
        if max_bytes is not None:
            size = len(text.encode("utf-8", "replace"))
            if size > max_bytes:
                raise PasteTooLarge(size, max_bytes)
        if excerpt is None and not planned and self.excerpt_logs and len(text) > WHOLE_LOG_CHARS:
            got = self._from_excerpt(text.encode("utf-8", "replace"), t0, facts, repos, releases)
            if got is not None:
                return got
        pre = None
        if excerpt is not None:  # its bytes taken: the match lets them go when done
            windows = excerpt.windows()
            norm = normalise_excerpt(excerpt.take_encoded(), excerpt.length, windows)
        elif len(text) > BIG_TEXT_CHARS:  # a whole log: encoded once, normalised by regions
            pre = text.encode("utf-8", "replace")
            norm = normalise_log(text, encoded=pre)
        else:
            norm = normalise(text)
        ntext: str = norm.text
        data = norm.encoded
        if data is None:
            data = pre if pre is not None and ntext is text else ntext.encode("utf-8", "replace")
        else:
            norm.encoded = None  # the report keeps `norm`: do not keep a second copy alive
        pre = None  # the scan reads `data`: a whole log's bytes are not held twice
        hits = Hits()
        for sh in [*self._shards, *([self._delta] if self._delta else [])]:
            sh.scan(data, ntext, hits)
        lines = locate_lines(data, ntext, hits.ends)
        del data  # scanned: the bytes of a whole log's text are let go before the report
        full: dict[int, dict[int, HitLine]] = {}
        heads: dict[int, dict[int, HitLine]] = {}
        for pid, end, is_head in hits:
            if not self._keys[pid]:
                continue  # tombstone: record removed or edited since the build
            line = lines[end]
            (heads if is_head else full).setdefault(pid, {}).setdefault(line.number, line)
        notes: list[str] = []
        ctx = read_context(ntext)
        cands = confirm_hits(
            ntext, full, heads, self._analysis, notes, lambda pid: len(self._patterns[pid]),
            ctx.code_lines,
        )  # fmt: skip
        self._mark_aliases(cands)
        return self._report(norm, ntext, cands, full, notes, t0, ctx, facts, set(repos), releases)

    def _from_excerpt(
        self,
        data: bytes,
        t0: float,
        facts: FactsOf | None,
        repos: Collection[str],
        releases: ReleasesOf | None,
    ) -> MatchReport | None:
        """The match of the whole log ``data`` (UTF-8) from its excerpt (`logstream`), or
        None when its normaliser triggers are dense: then it is normalised in one go, as
        when read whole. ``data`` is let go once the excerpt is read (a caller encoding
        the log passes its only reference)."""
        taken = read_excerpt(self, [data], chunk_bytes=len(data) + 1)
        del data
        if taken.dense():
            return None
        return match_excerpt(self, taken, facts=facts, repos=repos, releases=releases, started=t0)

    def _mark_aliases(self, cands: Iterable[Candidate]) -> None:
        if self._aliases:
            for c in cands:
                c.alias = self._alias_only(c.pid)

    def line_hits(self, data: bytes) -> Hits:
        """(pattern id, end byte offset, is_head) of hits that pick the lines of a log
        worth reading (`logstream`), in the UTF-8 ``data`` as pasted (not normalised):
        each a hit of a pattern's line literal (`Analysis.line_literal`), on a line its
        match may end on, or a hit of the pattern's own scan; so every line the scan hits,
        and a few more (`scan_hits` tells them apart)."""
        hits = Hits()
        shards = [*self._shards, *([self._delta] if self._delta else [])]
        # only the RE2 patterns read text: the bytes are decoded for them alone
        text = data.decode("utf-8", "replace") if any(sh.re2_set for sh in shards) else ""
        found = self._lines.find(data, hits)
        for sh in self._shards:
            if found:
                sh.scan_re2(text, hits)
            else:  # no database: the scan forms themselves find the lines
                sh.scan(data, text, hits)
        if self._delta is not None:  # the patterns edited since the build: a few
            self._delta.scan(data, text, hits)
        return hits

    def scan_hits(self, line: bytes, pids: Collection[int]) -> bool:
        """Whether the scan hits ``line`` (one line of a log, in UTF-8), which `line_hits`
        found for the patterns ``pids``: so when one of them was found by its own scan,
        and else when the scan of the line alone finds one of them (a line literal's
        patterns match within a line)."""
        if not self._lines.found_any() or any(
            pid >= self._lines.size or self._analysis(pid).line_literal() is None for pid in pids
        ):
            return True
        hits = Hits()
        text = line.decode("utf-8", "replace")
        for sh in self._shards:
            sh.scan(line, text, hits)
        return not set(pids).isdisjoint(hits.pids)

    def window_lines(self, pid: int) -> tuple[int, int, bytes | None]:
        """Lines above and below its hit line that confirming a hit of pattern ``pid``
        reads (`candidates.confirm_one`): a message may wrap, a trailing placeholder may
        sit on the next line; and the word, in lowercase ASCII, that a line above must
        hold for the match to start on it (None: any line may start it)."""
        a = self._analysis(pid)
        up = a.newlines + (WINDOW_EXTRA_LINES if a.template else 0)
        return up, a.newlines, start_word(a)

    def _report(
        self,
        norm: object,
        ntext: str,
        cands: list[Candidate],
        full: dict[int, dict[int, HitLine]],
        notes: list[str],
        t0: float,
        ctx: Context | None = None,
        facts: FactsOf | None = None,
        repos: set[str] | None = None,
        releases: ReleasesOf | None = None,
    ) -> MatchReport:
        sure, unsure = rank(cands)
        sim_hits: list = []
        if not sure:
            extra, sim_hits = fallback(
                ntext, notes, self._similar, self._entry_pid(), self._keys, self._analysis
            )
            if self._aliases:  # an older wording's entry suggests its record
                sim_hits = [(k.split(ALIAS_MARK, 1)[0], *rest) for k, *rest in sim_hits]
            merged = {c.pid: c for c in cands}
            self._mark_aliases(extra)
            for c in extra:  # keep the better reading of each pattern
                if c.pid not in merged or c.literal_exact > merged[c.pid].literal_exact:
                    merged[c.pid] = c
            sure, unsure = rank(list(merged.values()))
        ctx = ctx if ctx is not None else Context()
        sure, unsure = quoted_raises(sure, unsure, ctx)
        judged: dict[int, tuple[list[str], Weighed]] = {}
        if sure:
            ctx.read_locations(ntext, [c.start for c in sure])
            wanted = [k for c in sure for k in self._keys[c.pid]]
            known = facts(wanted) if facts is not None else {}
            sure, unsure, judged = judge(
                ntext, sure, unsure, ctx, self._keys, known, repos or set(),
                lambda pid: longest_literal(self._analysis(pid).pieces or ()),
            )  # fmt: skip
        fits: dict[str, ReleaseFit] = {}
        fit_weight: dict[int, int] = {}
        if sure and releases is not None:
            known_releases = releases({k for c in sure for k in self._keys[c.pid]})
            if known_releases:
                fits, reordered, fit_weight = place(
                    ntext, ctx, sure,
                    lambda pid: judged[pid][0] if pid in judged else self._keys[pid],
                    self._patterns.__getitem__, known_releases,
                )  # fmt: skip
                for pid, ks in reordered.items():
                    judged[pid] = (ks, judged[pid][1] if pid in judged else Weighed())
        elapsed = (time.perf_counter() - t0) * 1000
        return build_report(
            self._keys, norm, sure, unsure, sim_hits, full, notes, elapsed,
            self._messages, self.root_cause_order, judged, ctx.code_lines,
            wording_of=self.wording if self._aliases else None,
            fits=fits, fit_weight=fit_weight,
        )  # fmt: skip
