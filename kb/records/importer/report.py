"""What an import did: counts and the named errors (the contract's ``--json`` summary)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, NamedTuple

MAX_REPORTED_ERRORS = 1000


class LineError(NamedTuple):
    """One rejected line: its number, the field (``-`` for the line as a whole) and why."""

    line: int
    field: str
    message: str

    def __str__(self) -> str:
        return f"line {self.line}: {self.field}: {self.message}"


@dataclass(slots=True)
class ImportReport:
    """Counts and named rejections of one import (or of several files, ``add``)."""

    created: int = 0
    updated: int = 0
    unchanged: int = 0
    rejected: int = 0
    disabled: int = 0
    stale: int = 0
    conflicts: int = 0
    errors: list[LineError] = field(default_factory=list)
    conflicted: list[dict[str, str]] = field(default_factory=list)
    # Records stored disabled: which line, which record, and the engine's reason.
    disabled_records: list[dict[str, Any]] = field(default_factory=list)
    errors_truncated: int = 0
    lines: int = 0
    dry_run: bool = False
    rolled_back: bool = False
    seconds: float = 0.0

    def reject(self, line: int, field_name: str, message: str) -> None:
        self.rejected += 1
        if len(self.errors) < MAX_REPORTED_ERRORS:
            self.errors.append(LineError(line, field_name, message))
        else:
            self.errors_truncated += 1

    def note_disabled(self, line: int, record_id: str, reason: str) -> None:
        self.disabled += 1
        if len(self.disabled_records) < MAX_REPORTED_ERRORS:
            self.disabled_records.append({"line": line, "id": record_id, "reason": reason})

    def add(self, other: ImportReport) -> None:
        """Fold another file's report into this one (the command imports several files)."""
        for name in (
            "created",
            "updated",
            "unchanged",
            "rejected",
            "disabled",
            "stale",
            "conflicts",
            "lines",
            "errors_truncated",
            "seconds",
        ):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.errors.extend(other.errors)
        self.conflicted.extend(other.conflicted)
        self.disabled_records.extend(other.disabled_records)
        self.rolled_back = self.rolled_back or other.rolled_back

    def as_json(self) -> dict[str, Any]:
        """The command's `--json` summary (docs/importing.md): the six documented keys first,
        then the extra ones."""
        data = asdict(self)
        return {
            "created": data.pop("created"),
            "updated": data.pop("updated"),
            "unchanged": data.pop("unchanged"),
            "rejected": data.pop("rejected"),
            "disabled": data.pop("disabled"),
            "errors": [error._asdict() for error in data.pop("errors")],
            **data,
        }
