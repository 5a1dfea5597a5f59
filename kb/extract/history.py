"""One site followed across a source's releases: its wordings, its places, when it left.

`History` is fed the releases oldest to newest, each with only the files that changed
since the one before (and the paths removed, and git's renames). For each changed file it
pairs the sites it held before with the sites it holds now, in this order, each step
taking only what the earlier steps left:

1. same enclosing function, call kind and message template (whitespace-normalised): the
   same site, wherever its line moved; several of one kind pair by rank of line;
2. same function, call kind and error class, the template changed, the two templates at
   least `SIMILARITY` alike (``difflib``'s ratio): the message reworded in place; pairs are
   taken best-alike first; then same function, the class changed too, at least
   `CLASS_CHANGED_SIMILARITY` alike;
3. the old site's function has no site in the file any more (a function renamed, a raise
   moved to a helper): same template, else same call kind and class reworded;
   then, whatever the function and class, one kind of site (a raise, a log call) at least
   `FILE_SIMILARITY` alike;
4. across the files of one release (code moved to a file git did not see as a rename):
   same function and template, or same call kind, class and template, or the same
   template alone, each unique on both sides; then same kind of site and a named error
   class, reworded, at least `MOVED_SIMILARITY` alike.

A call kind is read without module qualifiers and ``raise`` (``raise orm_exc.NoResultFound``
is ``exc.NoResultFound`` is ``NoResultFound``): an import renamed, or an exception built
before it is raised, changes no site.

What is left is a site removed (before: closed, ``removed_in`` this release) or a new one.
Requiring the function in steps 1 and 2 is what keeps two sites that swap wordings apart:
each keeps its own function, so each is paired with itself reworded, never with the other.

The last point fed may be unnamed (``version=None``): the source's own revision past its
newest release tag, so that the current wording is the one the code has now. It moves a
site's wording and place but extends no release range.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from difflib import SequenceMatcher
from typing import Any

from kb.extract.identity import normalise_template, pair_in_order
from kb.extract.sites import Site

__all__ = ["SIMILARITY", "History", "Seen", "Tracked", "Wording", "similarity"]

#: How alike two templates of one function and call must be to be one site reworded
#: (docs/learning-a-codebase.md, "Releases": the bar was set on a hand-labelled sample).
SIMILARITY = 0.5
#: Same function, the error class changed with the message: nearly alike only.
CLASS_CHANGED_SIMILARITY = 0.8
#: One file, any function and class, one kind of site (a raise, a log): nearly alike only.
FILE_SIMILARITY = 0.7
#: The same across files (a site moved and reworded in one release): higher, as the
#: candidates are many more.
MOVED_SIMILARITY = 0.6


def similarity(a: str, b: str) -> float:
    """How alike two templates read, 0..1 (whitespace-normalised, case kept)."""
    return SequenceMatcher(None, normalise_template(a), normalise_template(b)).ratio()


@dataclass(slots=True)
class Seen:
    """One site as one release has it: the site and its record (dataset schema)."""

    site: Site
    record: dict[str, Any]

    @property
    def template(self) -> str:
        return normalise_template(self.site.template)


@dataclass(slots=True)
class Wording:
    message: str
    pattern: str
    first: int  # index of the point it first appeared at
    last: int | None = None  # None: still the site's wording
    introduced_by: dict[str, str] | None = None


@dataclass(slots=True)
class Place:
    path: str
    line: int
    first: int
    last: int | None = None


@dataclass(slots=True)
class Tracked:
    """One site's whole story. ``seen`` is the site as the last point that had it reads
    it (its snippet and link are that point's)."""

    number: int
    seen: Seen
    first: int
    wordings: list[Wording] = field(default_factory=list)
    places: list[Place] = field(default_factory=list)
    removed_at: int | None = None  # the first point without it

    @property
    def alive(self) -> bool:
        return self.removed_at is None


@dataclass(slots=True)
class _Step:
    index: int
    new_wordings: list[tuple[Tracked, Wording]] = field(default_factory=list)
    matched: dict[str, int] = field(default_factory=dict)  # how each pairing step counted


class History:
    """The sites of one source across its points (releases, then maybe its revision)."""

    def __init__(self) -> None:
        self.versions: list[str | None] = []
        self.tracked: list[Tracked] = []
        self._by_path: dict[str, list[Tracked]] = {}
        #: When a list: every pairing other than "same", and every site removed or new,
        #: as dicts (what a sample of the pairing's mistakes is drawn from).
        self.journal: list[dict[str, Any]] | None = None
        self.counts: dict[str, int] = {"same": 0, "reworded": 0, "renamed-function": 0,
                                       "moved-file": 0, "new": 0, "removed": 0}  # fmt: skip

    def step(
        self,
        version: str | None,
        files: dict[str, list[Seen]],
        removed: Iterable[str] = (),
        renamed: dict[str, str] | None = None,
    ) -> list[tuple[Tracked, Wording]]:
        """Feed the next point: ``files`` the sites of every file read at it (changed since
        the point before), ``removed`` paths gone, ``renamed`` new path -> old path.
        Returns the wordings this point brought (a new site's included), for the caller
        to find the commit that introduced each."""
        renamed = renamed or {}
        index = len(self.versions)
        self.versions.append(version)
        step = _Step(index)
        olds: dict[str, list[Tracked]] = {}
        for path in files:
            before = renamed.get(path, path)
            olds[path] = list(self._by_path.pop(before, []))
            if before != path:
                olds[path] += self._by_path.pop(path, [])
        for path in removed:
            if path in self._by_path and path not in files:
                olds.setdefault(f"\0{path}", []).extend(self._by_path.pop(path))
        left_old: list[Tracked] = []
        left_new: list[Seen] = []
        for path, earlier in olds.items():
            rest_old, rest_new = self._pair_file(earlier, files.get(path, []), step)
            left_old += rest_old
            left_new += rest_new
        rest_old, rest_new = self._pair_moved(left_old, left_new, step)
        for item in rest_old:
            self._close(item, index)
            self.counts["removed"] += 1
            self._note("removed", index, item.seen, None)
        for seen in rest_new:
            self._open(seen, step)
            self.counts["new"] += 1
            self._note("new", index, None, seen)
        return step.new_wordings

    # pairing -------------------------------------------------------------------

    def _pair_file(
        self, before: list[Tracked], now: list[Seen], step: _Step
    ) -> tuple[list[Tracked], list[Seen]]:
        old, new = list(before), list(now)

        def by_key(key_old: Any, key_new: Any, kind: str) -> None:
            nonlocal old, new
            groups_old: dict[Any, list[Tracked]] = {}
            for item in old:
                groups_old.setdefault(key_old(item), []).append(item)
            groups_new: dict[Any, list[Seen]] = {}
            for seen in new:
                k = key_new(seen)
                if k is not None:
                    groups_new.setdefault(k, []).append(seen)
            used_old: set[int] = set()
            used_new: set[int] = set()
            for k, sites in groups_new.items():
                items = groups_old.get(k)
                if not items:
                    continue
                pairs = pair_in_order([s.site.line for s in sites],
                                      [i.seen.site.line for i in items])  # fmt: skip
                for a, b in pairs:
                    if a is None or b is None:
                        continue
                    self._carry(items[b], sites[a], step, kind)
                    used_old.add(id(items[b]))
                    used_new.add(id(sites[a]))
            old = [i for i in old if id(i) not in used_old]
            new = [s for s in new if id(s) not in used_new]

        by_key(lambda t: _exact(t.seen), _exact, "same")
        old, new = self._alike(old, new, _kind, SIMILARITY, step, "reworded")
        # the class changed with the message (a more precise exception): nearly alike only
        old, new = self._alike(old, new, _function, CLASS_CHANGED_SIMILARITY, step, "reworded")
        # 3. and 4.: the old function has no site in the file any more (renamed, or its
        # raise moved to a helper): same template, else same call and class reworded
        functions = {seen.site.function for seen in now}
        if old and new:
            keep = [item for item in old if item.seen.site.function in functions]
            old = [item for item in old if item.seen.site.function not in functions]
            by_key(lambda t: t.seen.template, lambda s: s.template, "renamed-function")
            old, new = self._alike(old, new, _thrown, SIMILARITY, step, "renamed-function")
            old = keep + old
        # 5. what is left in the file, of one kind of site: the message moved to another
        # function and reworded, its class changed or not, only when nearly alike
        old, new = self._alike(old, new, _error_type, FILE_SIMILARITY, step, "reworded")
        return old, new

    def _alike(
        self,
        old: list[Tracked],
        new: list[Seen],
        key: Callable[[Seen], Any],
        bar: float,
        step: _Step,
        kind: str,
    ) -> tuple[list[Tracked], list[Seen]]:
        """Pair sites of one ``key`` whose templates are at least ``bar`` alike,
        best-alike first (then nearest line)."""
        if not old or not new:
            return old, new
        groups: dict[Any, list[int]] = {}
        for j, seen in enumerate(new):
            k = key(seen)
            if k is not None:
                groups.setdefault(k, []).append(j)
        pairs = []
        for i, item in enumerate(old):
            k = key(item.seen)
            for j in groups.get(k, []) if k is not None else []:
                a, b = item.seen.template, new[j].template
                matcher = SequenceMatcher(None, a, b)
                if matcher.real_quick_ratio() < bar or matcher.quick_ratio() < bar:
                    continue
                score = matcher.ratio()
                if score >= bar:
                    pairs.append((-score, abs(item.seen.site.line - new[j].site.line), i, j))
        taken_old: set[int] = set()
        taken_new: set[int] = set()
        for _score, _distance, i, j in sorted(pairs):
            if i in taken_old or j in taken_new:
                continue
            taken_old.add(i)
            taken_new.add(j)
            self._carry(old[i], new[j], step, kind)
        return (
            [item for i, item in enumerate(old) if i not in taken_old],
            [seen for j, seen in enumerate(new) if j not in taken_new],
        )

    def _pair_moved(
        self, old: list[Tracked], new: list[Seen], step: _Step
    ) -> tuple[list[Tracked], list[Seen]]:
        """Across the files of one release: a site that moved to another file (git saw no
        rename), with its function and template, or its call, class and template, or its
        template alone, each of them unique on both sides; then moved and reworded (same
        kind of site and a named error class, at least `MOVED_SIMILARITY` alike)."""
        for key in (_function_template, _thrown_template, _template):
            count_old: dict[Any, list[Tracked]] = {}
            for item in old:
                count_old.setdefault(key(item.seen), []).append(item)
            count_new: dict[Any, list[Seen]] = {}
            for seen in new:
                count_new.setdefault(key(seen), []).append(seen)
            used: set[int] = set()
            for k, sites in count_new.items():
                items = count_old.get(k, [])
                if len(sites) == 1 and len(items) == 1:
                    self._carry(items[0], sites[0], step, "moved-file")
                    used.add(id(items[0]))
                    used.add(id(sites[0]))
            old = [i for i in old if id(i) not in used]
            new = [s for s in new if id(s) not in used]
        return self._alike(old, new, _named_class, MOVED_SIMILARITY, step, "moved-file")

    # bookkeeping ----------------------------------------------------------------

    def _note(self, kind: str, index: int, old: Seen | None, new: Seen | None) -> None:
        if self.journal is None:
            return
        entry: dict[str, Any] = {"kind": kind, "release": self.versions[index]}
        for side, seen in (("old", old), ("new", new)):
            if seen is not None:
                site = seen.site
                entry[side] = {"path": site.path, "line": site.line, "function": site.function,
                               "call": site.call, "errorClass": site.error_class,
                               "template": seen.template}  # fmt: skip
        self.journal.append(entry)

    def _carry(self, item: Tracked, seen: Seen, step: _Step, kind: str) -> None:
        self.counts[kind] += 1
        if kind != "same":
            self._note(kind, step.index, item.seen, seen)
        index = step.index
        if seen.template != item.seen.template:
            current = item.wordings[-1]
            current.last = index - 1
            again = next((w for w in item.wordings if _same(w, seen)), None)
            if again is not None:  # an older wording back again: one wording, range widened
                item.wordings.remove(again)
                again.last = None
                item.wordings.append(again)
            else:
                wording = _wording(seen, index)
                item.wordings.append(wording)
                step.new_wordings.append((item, wording))
        place = item.places[-1]
        if (place.path, place.line) != (seen.site.path, seen.site.line):
            place.last = index - 1
            item.places.append(Place(seen.site.path, seen.site.line, index))
        item.seen = seen
        self._by_path.setdefault(seen.site.path, []).append(item)

    def _open(self, seen: Seen, step: _Step) -> None:
        item = Tracked(len(self.tracked), seen, step.index)
        wording = _wording(seen, step.index)
        item.wordings.append(wording)
        item.places.append(Place(seen.site.path, seen.site.line, step.index))
        self.tracked.append(item)
        self._by_path.setdefault(seen.site.path, []).append(item)
        step.new_wordings.append((item, wording))

    def _close(self, item: Tracked, index: int) -> None:
        item.removed_at = index
        item.wordings[-1].last = index - 1
        item.places[-1].last = index - 1

    # reading the story ----------------------------------------------------------

    def release(self, index: int | None) -> str | None:
        """The version of point ``index``, the newest named one at or before it (an
        unnamed last point extends nothing)."""
        if index is None:
            index = len(self.versions) - 1
        while index >= 0:
            version = self.versions[index]
            if version is not None:
                return version
            index -= 1
        return None

    def ranges(self, item: Tracked) -> dict[str, Any]:
        """The dataset's keys for ``item``: ``firstRelease``, ``lastRelease``,
        ``removedIn`` and ``releaseHistory`` (wordings and locations oldest first)."""
        last_index = len(self.versions) - 1 if item.alive else (item.removed_at or 0) - 1
        removed = None
        if item.removed_at is not None:
            removed = self.versions[item.removed_at]  # None: gone after the newest release
        wordings = []
        for wording in item.wordings:
            entry: dict[str, Any] = {
                "message": wording.message,
                "pattern": wording.pattern,
                **self._range(wording.first, wording.last),
            }
            if wording.introduced_by:
                entry["introducedBy"] = wording.introduced_by
            wordings.append(entry)
        locations = [
            {"path": place.path, "line": place.line, **self._range(place.first, place.last)}
            for place in item.places
        ]
        history: dict[str, Any] = {"wordings": wordings, "locations": locations}
        introduced = item.wordings[0].introduced_by
        if introduced:
            history["introducedBy"] = introduced
        if len(item.wordings) > 1 and item.wordings[-1].introduced_by:
            history["lastChangedBy"] = item.wordings[-1].introduced_by
        elif introduced:
            history["lastChangedBy"] = introduced
        return {
            **self._range(item.first, last_index),
            "removedIn": removed,
            "releaseHistory": history,
        }

    def _range(self, first: int, last: int | None) -> dict[str, str | None]:
        """``firstRelease`` and ``lastRelease`` of points ``first..last`` (``last`` None:
        still there); both None when only the unnamed last point had it."""
        start = self._first_named(first, last)
        return {"firstRelease": start, "lastRelease": self.release(last) if start else None}

    def _first_named(self, first: int, last: int | None) -> str | None:
        """The first named point in ``first..last`` (None when all are unnamed)."""
        end = len(self.versions) - 1 if last is None else last
        for index in range(first, end + 1):
            if self.versions[index] is not None:
                return self.versions[index]
        return None


_QUALIFIER = re.compile(r"\b[A-Za-z_][\w]*(?:\.|::)|^raise\s+")


def _call(seen: Seen) -> str:
    """The call kind without module qualifiers, and an exception made is one raised:
    ``raise orm_exc.NoResultFound`` and ``exc.NoResultFound`` are one kind (an import
    renamed, an exception built before its ``raise``, change no site)."""
    return _QUALIFIER.sub("", seen.site.call)


def _error_type(seen: Seen) -> str:
    return seen.site.error_type


def _function(seen: Seen) -> str:
    return seen.site.function


def _exact(seen: Seen) -> tuple[str, str, str]:
    return seen.site.function, _call(seen), seen.template


def _kind(seen: Seen) -> tuple[str, str, str | None]:
    return seen.site.function, _call(seen), seen.site.error_class


def _thrown(seen: Seen) -> tuple[str, str | None]:
    return _call(seen), seen.site.error_class


def _named_class(seen: Seen) -> tuple[str, str] | None:
    """Error type and class, only for a site that names its class (a bare log call or
    ``fmt.Errorf`` says too little to pair across files)."""
    if not seen.site.error_class:
        return None
    return seen.site.error_type, seen.site.error_class


def _template(seen: Seen) -> str:
    return seen.template


def _function_template(seen: Seen) -> tuple[str, str]:
    return seen.site.function, seen.template


def _thrown_template(seen: Seen) -> tuple[str, str | None, str]:
    return _call(seen), seen.site.error_class, seen.template


def _same(wording: Wording, seen: Seen) -> bool:
    return normalise_template(wording.message) == seen.template


def _wording(seen: Seen, index: int) -> Wording:
    return Wording(seen.record["errorMessage"], seen.record["messagePattern"], index)


def sites_of(records: Sequence[dict[str, Any]], sites: Sequence[Site]) -> list[Seen]:
    """Pair one file's admissible sites with their records (`to_records` keeps order)."""
    return [Seen(site, record) for site, record in zip(sites, records, strict=True)]
