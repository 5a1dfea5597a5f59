"""What an explanation holds, and the one sentence it renders.

Every name here comes from untrusted source text. The API returns plain strings and never
marks anything safe: escaping is the template's job, so the same explanation can be shown
in HTML, in the admin and in JSON without double escaping.
"""

from __future__ import annotations

from dataclasses import dataclass

# Conditions, values and receivers are quoted as written, but a reader needs a phrase, not
# a paragraph: longer text is cut at this many characters with an ellipsis.
MAX_TEXT = 100


def clip(text: str, limit: int = MAX_TEXT) -> str:
    """Whitespace collapsed to single spaces, cut to ``limit`` characters."""
    flat = " ".join(text.split())
    # Method chains split over lines read as written on one: `a.b().c()`, not `a .b() .c()`.
    flat = flat.replace(" .", ".").replace("( ", "(").replace(" )", ")")
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


@dataclass(frozen=True, slots=True)
class Condition:
    """Why control reaches the raise site.

    ``kind`` is one of: ``if`` (the condition holds), ``else`` (it does not), ``arm`` (a
    ``match``/``switch``/``case`` arm: ``pattern`` matched ``text``), ``call`` (the call
    ``text`` failed; ``via`` names the adapter, e.g. ``ok_or_else``), ``assert`` (the
    asserted ``text`` is false), ``err`` (``text`` returned an error, checked by ``via``),
    ``catch`` (an exception of type ``text`` was caught).
    """

    kind: str
    text: str
    pattern: str = ""
    via: str = ""


@dataclass(frozen=True, slots=True)
class Explanation:
    function: str | None  # "get_progress"
    owner: str | None  # impl type, class or Go receiver: "BackfillState"
    condition: Condition | None
    values: tuple[str, ...]  # what the message interpolates, as written
    lines: tuple[int, ...]  # snippet lines the explanation came from (real numbers)
    raised_by: str = ""  # the construct that raises: "bail!", "throw", "fmt.Errorf"
    sep: str = "."  # how the language joins owner and function: "::" in Rust
    # The message belongs to a declaration, not a raise site: "HummockError::MetaError"
    declared: str = ""

    def where(self) -> str | None:
        """The function as a reader would name it: ``Catalog::get_table``."""
        if not self.function:
            return None
        return f"{self.owner}{self.sep}{self.function}" if self.owner else self.function

    def condition_parts(self) -> list[tuple[str, bool]]:
        """The condition as a clause ("when `x` holds") in (text, is_code) pieces."""
        c = self.condition
        if c is None:
            return []
        t, p = (c.text, True), (c.pattern, True)
        if c.kind == "if":
            return [("when ", False), t, (" holds", False)]
        if c.kind == "else":
            return [("when ", False), t, (" does not hold (the ", False), ("else", True),
                    (" branch)", False)]  # fmt: skip
        if c.kind == "arm" and c.text:
            return [("when ", False), t, (" is ", False), p, (" (the ", False),
                    (f"{c.pattern} =>", True), (" arm)", False)]  # fmt: skip
        if c.kind == "arm" and c.pattern in ("_", "default"):
            return [("in the catch-all ", False), p, (" case", False)]
        if c.kind == "arm":
            return [("in the ", False), p, (" case", False)]
        if c.kind == "call":
            return [("when ", False), t, (" fails (", False), (f".{c.via}(…)", True), (")", False)]
        if c.kind == "assert":
            return [("when ", False), t, (" is false (", False), (c.via, True), (")", False)]
        if c.kind == "err":
            return [
                ("when ", False),
                t,
                (" returns an error (", False),
                (c.via, True),
                (")", False),
            ]
        if c.kind == "catch":
            return [("when a ", False), t, (" is caught", False)]
        if c.kind == "let-else":
            return [("when ", False), t, (" does not match ", False), p, (" (", False),
                    ("let … else", True), (")", False)]  # fmt: skip
        return [("when ", False), t]

    def parts(self) -> list[tuple[str, bool]]:
        """The sentence as (text, is_code) pieces, for a template to escape and mark up.

        Built piece by piece rather than by splitting the sentence, so a backtick inside
        a name from the code cannot shift which pieces are code.
        """
        where = self.where()
        if self.declared and not where and self.condition is None:
            declared = [("Declared with ", False), (self.declared, True)]
            return self._with_values([*declared, (" (the error's own message)", False)])
        out: list[tuple[str, bool]] = (
            [("Raised in ", False), (where, True)] if where else [("Raised", False)]
        )
        cond = self.condition_parts()
        if cond:
            out += [(" ", False), *cond]
        elif self.raised_by:
            out += [(" by ", False), (self.raised_by, True)]
        if not where and not cond and not self.raised_by:
            return []
        return self._with_values(out)

    def _with_values(self, out: list[tuple[str, bool]]) -> list[tuple[str, bool]]:
        if self.values:
            out.append(("; the message shows ", False))
            for index, value in enumerate(self.values):
                out += [(", ", False)] if index else []
                out.append((value, True))
        out.append((".", False))
        return out

    def sentence(self) -> str:
        """One short factual sentence, e.g. "Raised in `T::f` when `x` fails (…)."."""
        return "".join(f"`{piece}`" if code else piece for piece, code in self.parts())
