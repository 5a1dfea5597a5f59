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

    def where(self) -> str | None:
        """The function as a reader would name it: ``Catalog::get_table``."""
        if not self.function:
            return None
        return f"{self.owner}{self.sep}{self.function}" if self.owner else self.function

    def condition_phrase(self) -> str:
        """The condition as a clause ("when `x` holds"), or ``""``."""
        c = self.condition
        if c is None:
            return ""
        if c.kind == "if":
            return f"when `{c.text}` holds"
        if c.kind == "else":
            return f"when `{c.text}` does not hold (the `else` branch)"
        if c.kind == "arm":
            if c.text:
                return f"when `{c.text}` is `{c.pattern}` (the `{c.pattern} =>` arm)"
            return f"in the `{c.pattern}` case"
        if c.kind == "call":
            return f"when `{c.text}` fails (`.{c.via}(…)`)"
        if c.kind == "assert":
            return f"when `{c.text}` is false (`{c.via}`)"
        if c.kind == "err":
            return f"when `{c.text}` returns an error (`{c.via}`)"
        if c.kind == "catch":
            return f"when a `{c.text}` is caught"
        if c.kind == "let-else":
            return f"when `{c.text}` does not match `{c.pattern}` (`let … else`)"
        return f"when `{c.text}`"

    def sentence(self) -> str:
        """One short factual sentence, e.g. "Raised in `T::f` when `x` fails (…)."."""
        where = self.where()
        head = f"Raised in `{where}`" if where else "Raised"
        cond = self.condition_phrase()
        if cond:
            head = f"{head} {cond}"
        elif self.raised_by:
            head = f"{head} by `{self.raised_by}`"
        if not where and not cond and not self.raised_by:
            return ""
        if self.values:
            shown = ", ".join(f"`{v}`" for v in self.values)
            head = f"{head}; the message shows {shown}"
        return head + "."
