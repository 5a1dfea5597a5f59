"""Record validation shared by the admin, the importer and the API.

``admit_pattern`` asks the matcher whether it can compile a pattern (Hyperscan, else RE2);
a record whose pattern is refused is still stored, disabled with the engine's reason.
``validate_record`` is what ``ErrorRecord.clean()`` runs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from kb.schema import FIELDS, FieldError, clean_value


@dataclass(frozen=True, slots=True)
class PatternVerdict:
    ok: bool
    engine: str
    reason: str
    generic: bool = False


@lru_cache(maxsize=65536)
def admit_pattern(pattern: str) -> PatternVerdict:
    """Can the matcher compile this pattern? Cached: the answer depends on the text only."""
    try:
        from kb.matcher import admit_pattern as matcher_admit
    except ImportError:  # pragma: no cover - only before the matcher exists
        try:
            re.compile(pattern)
        except re.error as exc:
            return PatternVerdict(False, "", f"re: {exc}")
        return PatternVerdict(True, "re", "")
    verdict = matcher_admit(pattern)
    return PatternVerdict(
        ok=verdict.ok,
        engine=verdict.engine or "",
        reason=verdict.reason or "",
        generic=bool(getattr(verdict, "generic", False)),
    )


def validate_record(record: Any) -> dict[str, list[str]]:
    """Field errors for a record instance, keyed by model attribute (empty when valid)."""
    errors: dict[str, list[str]] = {}
    for field in FIELDS:
        try:
            value = getattr(record, field.attr)
            if field.kind == "datetime":
                continue  # model fields already hold datetimes
            clean_value(field, value)
        except FieldError as exc:
            errors.setdefault(field.attr, []).append(f"{field.key} {exc.message}")
    from kb.models import Severity

    if record.severity not in Severity.values:
        errors.setdefault("severity", []).append(
            f"severity must be one of {', '.join(Severity.values)}"
        )
    pattern = record.message_pattern or ""
    if pattern and "message_pattern" not in errors:
        verdict = admit_pattern(pattern)
        if not verdict.ok:
            errors.setdefault("message_pattern", []).append(
                f"The matcher cannot use this pattern: {verdict.reason}"
            )
    return errors
