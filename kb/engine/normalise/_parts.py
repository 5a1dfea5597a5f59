"""What `Structurer`'s mixins may use of it, declared once for the type checker.

`Structurer` (``_structure``) is the core of the structure pass; `JoinsMixin`,
`JsonLinesMixin` and `StacksMixin` are its other parts, each in the module of its
concern, and call the core's line helpers and one another's joins. This base names those
helpers so each mixin is checked against one declaration; at run time it is empty, and
`Structurer`'s own definitions are what runs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._escapes import Piece

if TYPE_CHECKING:
    from ._structure import Mark


class StructurerParts:
    src: str
    copied: int
    counts: dict[str, int]
    big: bool

    if TYPE_CHECKING:
        marks: dict[int, Mark]

        def line_end(self, ls: int) -> int: ...
        def next_line(self, ls: int) -> int: ...
        def prefix(self, ls: int) -> tuple[int, str | None]: ...
        def kind_of(self, ls: int) -> str: ...
        def mark(self, ls: int, **kw) -> int | None: ...
        def add_variant(
            self,
            after: int,
            lines: list[list[Piece]],
            per_line: list[dict] | None = None,
            **mark,
        ) -> list[int]: ...
        def _line_variants(self, ls: int, **mark) -> list[int]: ...
        def _join_run(
            self, run: list[int], *, level: str | None, kind: str | None = None
        ) -> list[int]: ...
