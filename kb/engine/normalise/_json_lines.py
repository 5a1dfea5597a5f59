"""JSON log lines and pretty-printed JSON objects: their message values, decoded.

Why this exists apart from `_structure.py`: a JSON log line holds the message inside an
escaped string value (``"msg": "conn \\"db\\" refused"``); its level decides whether it is
decoded at all (INFO lines of a whole log are not), and JSON that does not parse (cut off,
pasted in part) still has "key": "value" pairs worth decoding. `JsonLinesMixin` is one of
the parts of `Structurer`; it uses the core's line helpers, `mark` and `add_variant`.
"""

from __future__ import annotations

from ._escapes import (
    JSON_LEVEL_RE,
    JSON_MESSAGE_PAIR_RE,
    JSON_PAIR_RE,
    MESSAGE_KEYS,
    QUIET_LEVELS,
    SKIP_KEYS,
    Piece,
    decode_escapes,
)
from ._parts import StructurerParts
from ._prefix import canonical_level
from ._traceback import traceback_marks


class JsonLinesMixin(StructurerParts):
    """Decoded variants of JSON lines and JSON blocks (part of `Structurer`)."""

    # -- JSON -------------------------------------------------------------------------
    def _json_line(self, ls: int, le: int, pl: int, level: str | None) -> None:
        src = self.src
        js = ls + pl
        while js < le and src[js] in " \t":
            js += 1
        m = JSON_LEVEL_RE.search(src, js, min(le, js + 400))
        jlevel = (canonical_level(m.group("lvl")) if m else None) or level
        has_esc = src.find("\\", js, le) >= 0
        if jlevel in QUIET_LEVELS and (not has_esc or self.big):
            # not an error, and nothing to decode (or a whole log, where decoding every
            # INFO line would cost more than it helps): the raw line is scanned as it is
            if has_esc:
                self.counts["quiet_json"] += 1
            return
        spans = self._json_value_spans(js, le)
        self.mark(ls, level=jlevel)
        if not spans:
            return
        self._add_decoded(le, spans, jlevel)

    def _json_value_spans(self, js: int, le: int) -> list[tuple[int, int]]:
        """Raw spans (inside the quotes) of the message-like string values of a JSON line."""
        return self._message_spans(js, le) or self._json_value_spans_loose(js, le)

    def _message_spans(self, start: int, end: int) -> list[tuple[int, int]]:
        """Spans of the values of message keys between ``start`` and ``end`` (four or more
        characters: shorter values are codes, not wording)."""
        return [
            m.span(2)
            for m in JSON_MESSAGE_PAIR_RE.finditer(self.src, start, end)
            if m.end(2) - m.start(2) >= 4
        ]

    def _json_value_spans_loose(self, js: int, le: int) -> list[tuple[int, int]]:
        """For JSON that does not parse (cut off, pasted partly): find "key": "value" pairs."""
        src = self.src
        spans = []
        for m in JSON_PAIR_RE.finditer(src, js, le):
            key = m.group(1).lower()
            if key in SKIP_KEYS:
                continue
            vs, ve = m.span(2)
            if ve - vs >= 4 and (
                key in MESSAGE_KEYS
                or key.endswith(("error", "message", "msg"))
                or (src.find("\\", vs, ve) >= 0 and ve - vs >= 8)
            ):
                spans.append((vs, ve))
        return spans

    def _json_block(self, run: list[int], level: str | None) -> None:
        """A pretty-printed JSON object over several lines: decode its message values too."""
        src = self.src
        spans: list[tuple[int, int]] = []
        for ls in run:
            le = self.line_end(ls)
            m = JSON_LEVEL_RE.search(src, ls, le)
            if m:
                level = canonical_level(m.group("lvl")) or level
            spans += self._message_spans(ls, le)
        if not spans:
            return
        self._add_decoded(self.line_end(run[-1]), spans, level)

    def _add_decoded(self, end: int, spans: list[tuple[int, int]], level: str | None) -> None:
        """The decoded message values ``spans`` as a variant line after ``end``."""
        src = self.src
        lines: list[list[Piece]] = []
        for vs, ve in spans:
            lines.extend(decode_escapes(src, vs, ve))
        texts = ["".join(src[s:e] if t is None else t for t, s, e in p) for p in lines]
        self.add_variant(end, lines, per_line=traceback_marks(texts), derived="json", level=level)
        self.counts["json"] += 1
