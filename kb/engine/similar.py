"""Near-miss search: which known error messages does a log line *resemble*?

Why this exists: the regex matcher only finds a record when today's template
matches the pasted text. Messages get reworded between releases, pastes get
truncated, and some errors are simply not in the dataset. For those lines the
app shows *suggestions*: records whose message template uses similar wording,
each with a similarity score and a human-readable reason.

How it works (pure Python + rapidfuzz, no Django):

1. ``build`` strips the placeholders (``{}``, ``{:?}``, ``{name}``, ``%s``,
   ``%(name)s``, ``%v`` ...) from each template, keeping the literal words.
   Records with an identical template share one *entry* (all keys are kept and
   returned together as one suggestion slot's worth of keys).
2. An inverted index maps each literal word to the entries that contain it,
   with an IDF weight (rare words such as ``vnode`` or ``backfill_state`` say
   much more than ``failed`` or ``the``).
3. ``query`` blanks paths/URLs in the line, takes its rarest known words
   (rarest first), and lets their entries in as candidates with a pre-score
   (shared IDF / sqrt(template weight)) until ``admit_size`` candidates are in;
   commoner words then only re-score those (a C-speed set intersection). So the
   work per line is bounded and does not grow like a scan of the corpus.
4. The best 60 are re-scored by exact IDF-weighted *coverage* (share of the
   template's word weight present in the line); the best 30 get
   ``score = (0.5 * coverage + 0.5 * partial_ratio) * specificity`` where
   ``partial_ratio`` is rapidfuzz's on ``default_process``-ed literal text and
   ``specificity = min(1, weight / (2.6 * ln N)) ** 0.5`` damps templates with
   little rare wording (``database``, ``invalid engine``).

Placeholder stripping, tokens, path blanking and the reason text are in ``similar_text.py``.

Why this scorer: on the synthetic rewordings of real templates against INFO lines
(``benchmarks/bench_similar.py``, which compares the variants and writes the figures
to ``benchmarks/results/similar.json``), coverage combined with ``partial_ratio`` is
as good as the best combination tried and better than any single measure; without the
specificity factor, templates of common words crowd out the right one.
``partial_token_set_ratio`` is useless here: it gives full marks for any one shared word.

Score scale: every score is a float in ``[0, 1]``. ``DEFAULT_MIN_SCORE`` is where the
drift set's recall@3 stays high while few INFO lines get a suggestion (the benchmark
reports both at the threshold).

Limitations: words are matched whole (no stemming, typos or camelCase
splitting; a word truncated mid-way is lost); a line made only of common words
samples its candidates; one result per distinct template (its first key; the
others are in ``SimilarHit.same_message``).
"""

from __future__ import annotations

import hashlib
import math
from array import array
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import pairwise
from operator import itemgetter
from typing import Any, ClassVar

from rapidfuzz import fuzz, process
from rapidfuzz.utils import default_process

from . import cache
from .similar_text import _MAX_QUERY_CHARS, _clean_line, explain, literal_text, tokens

__all__ = [
    "DEFAULT_MIN_SCORE",
    "SimilarHit",
    "SimilarityIndex",
]

#: Suggestions scoring below this are dropped (scale 0..1). Chosen from the
#: synthetic drift set vs INFO-line negatives, see benchmarks/bench_similar.py.
DEFAULT_MIN_SCORE = 0.58

# Work bounds per query (they keep the cost per line flat as the corpus grows).
_MAX_QUERY_TOKENS = 12  # rarest known words of the line used to find candidates
_ADMIT = 1500  # distinct entries admitted as candidates before only re-scoring
_ADMIT_SCALE_FROM = 100_000  # above this many entries, admit grows with sqrt(N)
_POSTING_BUDGET = 5000  # posting entries intersected (C speed) per line when re-scoring
_COVERAGE_CANDIDATES = 60  # entries re-scored by exact weighted coverage
_FUZZY_CANDIDATES = 30  # entries scored with rapidfuzz
# Total IDF weight from which a template counts as fully specific, in units of
# the largest possible IDF (log(N+1)): a few unique words' worth, whatever the corpus
# size. Below it the score is scaled by sqrt(weight / this).
_SPECIFIC_WORDS = 2.6


class _ItemsHash:
    """A SHA-256 of ``(key, template)`` items in order, fed list by list (`fed`), the same
    however the items were split: the keys and the templates, each joined by NUL, and
    the length of every one (so no two lists hash alike), each a running hash fed at C
    speed."""

    __slots__ = ("_hashes", "n")

    def __init__(self) -> None:
        self._hashes = tuple(hashlib.sha256() for _ in range(4))
        self.n = 0  # items fed

    def fed(self, items: Sequence[tuple[str, str]]) -> _ItemsHash:
        """A copy that has also been fed ``items``, after those fed so far."""
        out = _ItemsHash()
        out._hashes = tuple(h.copy() for h in self._hashes)
        out.n = self.n + len(items)
        if items:
            lead = "\x00" if self.n else ""
            for column, (texts, lengths) in enumerate(
                zip(out._hashes[:2], out._hashes[2:], strict=True)
            ):
                values = list(map(itemgetter(column), items))
                texts.update((lead + "\x00".join(values)).encode("utf-8", "surrogatepass"))
                lengths.update(array("Q", map(len, values)).tobytes())
        return out

    def hexdigest(self) -> str:
        return hashlib.sha256(b"".join(h.digest() for h in self._hashes)).hexdigest()


def _prefix_hash(items: Sequence[tuple[str, str]], source: tuple[int, str]) -> _ItemsHash | None:
    """The hash of the first ``n`` items when ``items`` holds more than them and they are
    the ones ``source`` (``(n, digest)``) describes; else None."""
    n, digest = source
    if type(n) is not int or not 0 < n < len(items):
        return None
    h = _ItemsHash().fed(items[:n])
    return h if h.hexdigest() == digest else None


@dataclass(frozen=True, slots=True)
class SimilarHit:
    """One suggestion with its explanation (``query_explained``)."""

    key: str  # first key of the entry (the others are in ``same_message``)
    score: float  # 0..1
    reason: str
    same_message: tuple[str, ...]  # every key with this identical template
    template: str


class SimilarityIndex(cache.Serialised):
    """Inverted index of template words + rapidfuzz rescoring; see module doc."""

    FORMAT: ClassVar[str] = "kb-similarity-index-v1"

    #: Tunables (class attributes; the benchmark sweeps them).
    posting_budget: int = _POSTING_BUDGET
    admit_size: int = _ADMIT
    overflow: float = 2.0  # a word may admit up to this many times the room left
    pool_size: int = _COVERAGE_CANDIDATES
    fuzzy_size: int = _FUZZY_CANDIDATES
    fuzzy_scorer = staticmethod(fuzz.partial_ratio)
    coverage_weight: float = 0.5
    tail_discount: float = 0.0  # discounting later words gave no recall at equal false rate

    __slots__ = (
        "_entry_inv_sqrt_w",
        "_entry_keys",
        "_entry_lit",
        "_entry_proc",
        "_entry_spec",
        "_entry_tok",
        "_entry_tok_off",
        "_entry_weight",
        "_idf",
        "_post",
        "_post_off",
        "_source",
        "_templates",
        "_vocab",
    )

    def __init__(self) -> None:
        self._templates: list[str] = []
        self._entry_keys: list[tuple[str, ...]] = []
        self._entry_lit: list[str] = []
        self._entry_proc: list[str] = []
        self._entry_tok: array = array("I")  # flat token ids per entry
        self._entry_tok_off: array = array("I", [0])
        self._entry_weight: array = array("d")
        self._entry_inv_sqrt_w: array = array("d")
        self._entry_spec: array = array("d")
        self._vocab: dict[str, int] = {}
        self._idf: array = array("d")
        self._post: array = array("I")  # flat posting lists (entry ids)
        self._post_off: array = array("I", [0])
        # (how many items it was built from, `_ItemsHash` of them): what `extend` checks
        self._source: tuple[int, str] = (0, "")

    # ------------------------------------------------------------------ build
    @classmethod
    def build(cls, items: Iterable[tuple[str, str]]) -> SimilarityIndex:
        """Index ``(key, message template)`` pairs; identical templates share an entry."""
        self = cls()
        pairs = items if isinstance(items, list) else list(items)
        self._add(pairs)
        self._source = (len(pairs), _ItemsHash().fed(pairs).hexdigest())
        return self

    def extend(self, items: Sequence[tuple[str, str]]) -> bool:
        """Index the items past those this index was built from, if ``items`` starts with
        exactly those (the messages of a build after an import: the records before it,
        then its own); whether it did. The index is then the one `build` makes of
        ``items``, entry for entry, at the cost of the new items and of re-weighing the
        words (every word's rarity changes with the count), not of reading every
        message again."""
        h = _prefix_hash(items, self._source)
        if h is None:
            return False
        self._carry_on(items, h)
        return True

    def _carry_on(self, items: Sequence[tuple[str, str]], h: _ItemsHash) -> None:
        """Index the items past this index's own, ``h`` the hash of its own (checked)."""
        more = items[self._source[0] :]
        self._add(more)
        self._source = (len(items), h.fed(more).hexdigest())

    @classmethod
    def resumed(
        cls, plain: dict[str, Any], blobs: Sequence[memoryview], items: Sequence[tuple[str, str]]
    ) -> SimilarityIndex | None:
        """The index `to_plain` described, extended by ``items`` past its own (`extend`);
        None, before any of it is read, when ``items`` does not start with its own."""
        n, digest = plain.get("source", (0, ""))
        h = _prefix_hash(items, (n, digest))
        if h is None:
            return None
        index = cls.from_plain(plain, blobs)
        index._carry_on(items, h)
        return index

    def _add(self, items: Sequence[tuple[str, str]]) -> None:
        """Entries for ``items`` after the ones held (a known template takes the key),
        then the posting lists, word weights and entry weights of the whole."""
        entry_of = {t: e for e, t in enumerate(self._templates)}
        keys = self._entry_keys
        vocab = self._vocab
        v_held = len(vocab)
        more: dict[int, list[int]] = {}  # word id -> the new entries holding it
        entry_tok = self._entry_tok
        entry_off = self._entry_tok_off
        also: dict[int, list[str]] = {}  # entry id -> its keys past the first
        for key, template in items:
            eid = entry_of.get(template)
            if eid is not None:
                also.setdefault(eid, []).append(key)
                continue
            eid = entry_of[template] = len(self._templates)
            lit = literal_text(template)
            self._templates.append(template)
            keys.append((key,))
            self._entry_lit.append(lit)
            self._entry_proc.append(default_process(lit))
            for tok in dict.fromkeys(tokens(lit)):
                tid = vocab.get(tok)
                if tid is None:
                    tid = vocab[tok] = len(vocab)
                more.setdefault(tid, []).append(eid)
                entry_tok.append(tid)
            entry_off.append(len(entry_tok))
        for eid, extra in also.items():
            keys[eid] = (*keys[eid], *extra)
        # The posting lists: each word's entries so far, then its new ones.
        post, post_off = self._post, self._post_off
        flat, offsets = array("I"), array("I", [0])
        for tid in range(len(vocab)):
            if tid < v_held:
                flat.extend(post[post_off[tid] : post_off[tid + 1]])
            if tid in more:
                flat.extend(more[tid])
            offsets.append(len(flat))
        self._post, self._post_off = flat, offsets
        n = len(self._templates)
        self._idf = idf = array(
            "d", (math.log((n + 1) / (b - a + 0.5)) for a, b in pairwise(offsets))
        )
        at = idf.__getitem__
        self._entry_weight = array(
            "d", (sum(map(at, entry_tok[a:b])) for a, b in pairwise(entry_off))
        )
        self._compute_spec()

    def __len__(self) -> int:
        """Number of distinct templates (entries)."""
        return len(self._templates)

    # --------------------------------------------------------- serialisation
    _TABLES: ClassVar[dict[str, str]] = {  # the numeric tables: attribute -> array type
        "_entry_tok": "I",
        "_entry_tok_off": "I",
        "_entry_weight": "d",
        "_idf": "d",
        "_post": "I",
        "_post_off": "I",
        "_entry_spec": "d",  # derived from the weights, stored: computing them costs more
        "_entry_inv_sqrt_w": "d",  # than reading them
    }

    def to_plain(self, blobs: list[bytes]) -> dict[str, Any]:
        return {
            "templates": cache.put_texts(self._templates, blobs),
            "keys": cache.put_groups(self._entry_keys, blobs),
            "lit": cache.put_texts(self._entry_lit, blobs),
            "proc": cache.put_texts(self._entry_proc, blobs),
            "vocab": cache.put_texts(list(self._vocab), blobs),  # ids are in insertion order
            "tables": {name: cache.put_table(getattr(self, name), blobs) for name in self._TABLES},
            "source": list(self._source),
        }

    @classmethod
    def from_plain(cls, plain: dict[str, Any], blobs: Sequence[memoryview]) -> SimilarityIndex:
        """The index `to_plain` described, its tables checked against each other so that
        a query only ever reads inside them (the bytes may come from another host)."""
        self = cls()
        self._templates = cache.get_texts(plain["templates"], blobs)
        n = len(self._templates)
        self._entry_keys = list(map(tuple, cache.get_groups(plain["keys"], blobs)))
        self._entry_lit = cache.get_texts(plain["lit"], blobs)
        self._entry_proc = cache.get_texts(plain["proc"], blobs)
        words = cache.get_texts(plain["vocab"], blobs)
        self._vocab = dict(zip(words, range(len(words)), strict=True))
        where = plain["tables"]
        for name, typecode in self._TABLES.items():
            setattr(self, name, cache.get_table(where[name], typecode, blobs))
        n_items, digest = plain.get("source", (0, ""))
        self._source = (int(n_items), str(digest))
        v = len(words)
        tok, off, post, post_off = self._entry_tok, self._entry_tok_off, self._post, self._post_off
        if not (
            len(self._entry_keys) == len(self._entry_lit) == len(self._entry_proc) == n
            and all(self._entry_keys)
            and len(self._vocab) == v == len(self._idf) == len(post_off) - 1
            and len(off) == n + 1 == len(self._entry_weight) + 1
            and n == len(self._entry_spec) == len(self._entry_inv_sqrt_w)
            and off[0] == 0 == post_off[0]
            and off[-1] == len(tok)
            and post_off[-1] == len(post)
            and all(a <= b for a, b in pairwise(off))
            and all(a <= b for a, b in pairwise(post_off))
            and (not tok or max(tok) < v)
            and (not post or max(post) < n)
        ):
            raise ValueError("similarity tables do not fit together")
        return self

    # ------------------------------------------------------------------ query
    def keys_of(self, key: str) -> tuple[str, ...]:
        """All keys sharing ``key``'s template (linear scan; for tests and tools)."""
        for keys in self._entry_keys:
            if key in keys:
                return keys
        return ()

    def _candidates(self, line: str) -> tuple[list[tuple[float, int]], set[int], str]:
        """Score entries for ``line``: returns ([(score, entry)], query token ids, processed)."""
        line = _clean_line(line)
        vocab = self._vocab
        qids = {vocab[t] for t in tokens(line) if t in vocab}
        if not qids:
            return [], qids, ""
        idf = self._idf
        post, off = self._post, self._post_off
        # Rarest words first, within a budget of posting entries: the work per
        # line stays flat as the corpus grows. Common words only re-score below.
        ordered = sorted(qids, key=idf.__getitem__, reverse=True)[:_MAX_QUERY_TOKENS]
        # acc[e] = sum of the shared words' IDF / sqrt(entry weight): a cheap
        # pre-score that favours covering rare words without favouring long
        # templates. Once `admit` entries are in, later (commoner) words only
        # add to them, so the dict and the sort below stay small.
        acc: dict[int, float] = {}
        get = acc.get
        inv = self._entry_inv_sqrt_w
        budget, admit = self.posting_budget, self.admit_size
        if len(inv) > _ADMIT_SCALE_FROM:
            # Rare words' lists grow with the corpus; admit more to keep recall (a
            # fixed admission loses recall on large corpora; the square root keeps
            # the work per line growing slower than the corpus).
            admit = int(admit * math.sqrt(len(inv) / _ADMIT_SCALE_FROM))
        for tid in ordered:
            a, b = off[tid], off[tid + 1]
            w = idf[tid]
            room = admit - len(acc)
            if room > 0 and (not acc or b - a <= self.overflow * room):
                # Rare word: its entries become candidates (Python loop over a short
                # list; for a line of only common words the first list is cut short).
                for e in post[a : min(b, a + admit)]:
                    acc[e] = get(e, 0.0) + w * inv[e]
            else:
                # Commoner word: only re-score the candidates (C-speed intersection).
                if b - a > budget:
                    continue
                budget -= b - a
                for e in acc.keys() & post[a:b]:
                    acc[e] += w * inv[e]
        if not acc:
            return [], qids, ""
        if len(acc) > self.pool_size:
            pool = sorted(acc, key=acc.__getitem__, reverse=True)[: self.pool_size]
        else:
            pool = list(acc)
        ew = self._entry_weight
        etok, eoff = self._entry_tok, self._entry_tok_off
        scored: list[tuple[float, int]] = []
        tail_discount = self.tail_discount
        for e in pool:
            # Weighted share of the template's words present in the line; words
            # after the last shared one count less (the paste may be truncated).
            shared = tail = 0.0
            for t in etok[eoff[e] : eoff[e + 1]]:
                if t in qids:
                    shared += idf[t]
                    tail = 0.0
                else:
                    tail += idf[t]
            w = ew[e] - tail_discount * tail
            scored.append((shared / w if w > 0 else 0.0, e))
        scored.sort(reverse=True)
        return scored[: self.fuzzy_size], qids, default_process(line)

    def _ranked(self, line: str, limit: int, min_score: float) -> list[tuple[float, int]]:
        cands, _qids, proc = self._candidates(line)
        if not cands or not proc:
            return []
        procs = self._entry_proc
        fz = process.extract(
            proc,
            {e: procs[e] for _cov, e in cands},
            scorer=self.fuzzy_scorer,
            processor=None,
            limit=None,
        )
        fz_of = {e: sc / 100.0 for _choice, sc, e in fz}
        wc = self.coverage_weight
        spec = self._entry_spec
        out = []
        for cov, e in cands:
            score = (wc * cov + (1.0 - wc) * fz_of.get(e, 0.0)) * spec[e]
            if score >= min_score:
                out.append((score, e))
        out.sort(key=lambda x: (-x[0], x[1]))
        return out[:limit]

    def _compute_spec(self) -> None:
        """Per-entry factor damping templates with little rare wording (``database``)."""
        full = _SPECIFIC_WORDS * math.log(len(self._templates) + 1)
        self._entry_spec = array("d", (min(1.0, w / full) ** 0.5 for w in self._entry_weight))
        self._entry_inv_sqrt_w = array(
            "d", (1.0 / math.sqrt(w) if w > 0 else 0.0 for w in self._entry_weight)
        )

    def query(
        self, line: str, *, limit: int = 5, min_score: float = DEFAULT_MIN_SCORE
    ) -> list[tuple[str, float]]:
        """Best entries for ``line`` as ``(key, score 0..1)``, best first.

        One item per distinct template: the key is the entry's first key; use
        :meth:`query_explained` (``same_message``) or :meth:`keys_of` for the rest.
        """
        return [
            (self._entry_keys[e][0], round(s, 4)) for s, e in self._ranked(line, limit, min_score)
        ]

    def query_many(
        self,
        lines: Sequence[str],
        *,
        limit: int = 5,
        min_score: float = DEFAULT_MIN_SCORE,
    ) -> list[list[tuple[str, float]]]:
        """``query`` for many lines (identical lines are computed once)."""
        memo: dict[str, list[tuple[str, float]]] = {}
        out = []
        for line in lines:
            res = memo.get(line)
            if res is None:
                res = memo[line] = self.query(line, limit=limit, min_score=min_score)
            out.append(res)
        return out

    def query_explained(
        self, line: str, *, limit: int = 5, min_score: float = DEFAULT_MIN_SCORE
    ) -> list[SimilarHit]:
        """Like :meth:`query` with a reason string and all keys per suggestion."""
        hits = []
        qtoks = set(tokens(_clean_line(line)))
        for score, e in self._ranked(line, limit, min_score):
            hits.append(
                SimilarHit(
                    key=self._entry_keys[e][0],
                    score=round(score, 4),
                    reason=explain(
                        self._entry_lit[e],
                        line[:_MAX_QUERY_CHARS],
                        qtoks,
                        self._vocab,
                        self._idf,
                        score,
                    ),
                    same_message=self._entry_keys[e],
                    template=self._templates[e],
                )
            )
        return hits
