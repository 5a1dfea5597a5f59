"""The dataset's record schema, in one place: keys, types, and the model field of each.

The importer validates incoming lines against ``FIELDS``; the exporter writes records back
in the same key order, so a file that was imported and exported again compares equal.
Pure Python apart from reading attributes off a model instance.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any


@dataclass(frozen=True, slots=True)
class Field:
    key: str  # the dataset's key
    attr: str  # the model attribute
    kind: str  # str | int | list | datetime
    nullable: bool = False
    required: bool = True
    max_length: int | None = None
    curatable: bool = True  # may a curator edit it (provenance fields may not)
    # Added after the first dataset version: may be absent from a line (an older file), and
    # is left out of an exported line while it holds nothing, so older files round-trip.
    optional: bool = False


FIELDS: tuple[Field, ...] = (
    Field("id", "id", "str", max_length=64, curatable=False),
    # Source location: empty ("" and null) for a record reported from the field.
    Field("repo", "repo", "str", max_length=200, curatable=False),
    Field("slug", "slug", "str", max_length=200),
    Field("errorCode", "error_code", "str", nullable=True, max_length=200),
    Field("errorMessage", "error_message", "str"),
    Field("messagePattern", "message_pattern", "str"),
    Field("errorType", "error_type", "str", max_length=40),
    Field("errorClass", "error_class", "str", nullable=True, max_length=200),
    Field("httpStatus", "http_status", "int", nullable=True),
    Field("severity", "severity", "str", max_length=20),
    Field("filePath", "file_path", "str", max_length=500, curatable=False),
    Field("lineNumber", "line_number", "int", nullable=True, curatable=False),
    Field("sourceCode", "source_code", "str", curatable=False),
    Field("sourceCodeStart", "source_code_start", "int", nullable=True, curatable=False),
    Field("sourceCodeEnd", "source_code_end", "int", nullable=True, curatable=False),
    Field("githubUrl", "github_url", "str", max_length=1000, curatable=False),
    Field("documentation", "documentation", "str", nullable=True),
    Field("triggerScenarios", "trigger_scenarios", "str", nullable=True),
    Field("commonSituations", "common_situations", "str", nullable=True),
    Field("solutions", "solutions", "list"),
    Field("exampleFix", "example_fix", "str", nullable=True),
    Field("handlingStrategy", "handling_strategy", "str", nullable=True, max_length=60),
    Field("validationCode", "validation_code", "str", nullable=True),
    Field("typeGuard", "type_guard", "str", nullable=True),
    Field("tryCatchPattern", "try_catch_pattern", "str", nullable=True),
    Field("preventionTips", "prevention_tips", "list"),
    Field("tags", "tags", "list"),
    Field("backgroundTag", "background_tag", "str", nullable=True, max_length=100),
    Field("analyzedSha", "analyzed_sha", "str", max_length=100, curatable=False),
    Field("analyzedAt", "analyzed_at", "datetime", nullable=True, curatable=False),
    Field("contentChangedAt", "content_changed_at", "datetime", nullable=True, curatable=False),
    Field("schemaVersion", "schema_version", "int", curatable=False),
    # Release history, learned from a source's releases (docs/learning-a-codebase.md, "Releases"):
    # the first and last release whose code has the site, the first release without it,
    # and ``releaseHistory`` (its shape: at ``HISTORY_LIMITS``). A curator cannot edit them; a
    # curator can retire a wording that misleads (``retiredWordings``, its patterns).
    Field("firstRelease", "first_release", "str", nullable=True, max_length=100,
          curatable=False, optional=True),
    Field("lastRelease", "last_release", "str", nullable=True, max_length=100,
          curatable=False, optional=True),
    Field("removedIn", "removed_in", "str", nullable=True, max_length=100,
          curatable=False, optional=True),
    Field("releaseHistory", "release_history", "history", nullable=True, curatable=False,
          optional=True),
    Field("retiredWordings", "retired_wordings", "list", optional=True),
)  # fmt: skip
BY_KEY: dict[str, Field] = {f.key: f for f in FIELDS}
BY_ATTR: dict[str, Field] = {f.attr: f for f in FIELDS}
# Fields whose change can change what the matcher compiles (``release_history`` holds the older
# wordings it compiles beside the record's own pattern).
MATCH_ATTRS = frozenset(
    {"message_pattern", "error_message", "status", "disabled_reason", "release_history",
     "retired_wordings"}
)  # fmt: skip
# The optional fields, in model terms: absent from an incoming line, they keep what is stored.
OPTIONAL_ATTRS = frozenset(f.attr for f in FIELDS if f.optional)
# Fields a re-import compares, in model terms (everything the dataset carries).
CONTENT_ATTRS: tuple[str, ...] = tuple(f.attr for f in FIELDS if f.key != "id")
MAX_INT = 2**63 - 1
# Upper bounds of the model's integer columns (PostgreSQL enforces them, SQLite would not:
# checking here keeps both backends identical).
INT_LIMITS: dict[str, int] = {"httpStatus": 32767}
MAX_INT_COLUMN = 2**31 - 1
MAX_TAG_LENGTH = 100  # Tag.name
NOT_BLANK = frozenset({"id", "errorMessage", "messagePattern"})  # strings that must not be blank


class FieldError(ValueError):
    """One problem with one field of one record: carries the dataset key."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field
        self.message = message


def parse_datetime(value: str) -> datetime:
    """ISO 8601 with a ``Z`` or an offset; naive values are taken as UTC."""
    parsed = datetime.fromisoformat(value)
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed.astimezone(UTC)


def format_datetime(value: datetime | None) -> str | None:
    """The dataset's own form: ISO 8601 in UTC with milliseconds and a ``Z``."""
    if value is None:
        return None
    return value.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _check_text(key: str, value: str) -> None:
    """No NUL (PostgreSQL text cannot hold it) and no lone surrogate (not Unicode)."""
    if "\x00" in value:
        raise FieldError(key, "contains a NUL character")
    if not value.isascii():
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise FieldError(key, "contains a lone surrogate (invalid Unicode)") from None


Checker = Callable[[Any], Any]


def _checker(field: Field, check: Checker) -> Checker:
    """``check`` (for a value that is not ``None``) behind the field's null rule."""
    key, nullable = field.key, field.nullable

    def checked(value: Any) -> Any:
        if value is None:
            if nullable:
                return None
            raise FieldError(key, "must not be null")
        return check(value)

    return checked


def _str_checker(field: Field) -> Checker:
    key, max_length = field.key, field.max_length
    not_blank = key in NOT_BLANK

    def check(value: Any) -> Any:
        if not isinstance(value, str):
            raise FieldError(key, f"must be a string, not {type(value).__name__}")
        _check_text(key, value)
        if max_length and len(value) > max_length:
            raise FieldError(key, f"is longer than {max_length} characters")
        if not_blank and not value.strip():
            raise FieldError(key, "must not be empty")
        return value

    return check


def _int_checker(field: Field) -> Checker:
    key = field.key
    limit = INT_LIMITS.get(key, MAX_INT_COLUMN)

    def check(value: Any) -> Any:
        if isinstance(value, bool) or not isinstance(value, int):
            raise FieldError(key, f"must be an integer, not {type(value).__name__}")
        if not 0 <= value <= limit:
            raise FieldError(key, f"is out of range (0 to {limit})")
        return value

    return check


def _list_checker(field: Field) -> Checker:
    key = field.key
    item_limit = MAX_TAG_LENGTH if key == "tags" else None

    def check(value: Any) -> Any:
        if not isinstance(value, list):
            raise FieldError(key, "must be a list of strings")
        for item in value:
            if not isinstance(item, str):
                raise FieldError(key, "must be a list of strings")
            _check_text(key, item)
            if item_limit and len(item) > item_limit:
                raise FieldError(key, f"has an item longer than {item_limit} characters")
        return value

    return check


def _datetime_checker(field: Field) -> Checker:
    key = field.key

    def check(value: Any) -> Any:
        if not isinstance(value, str):
            raise FieldError(key, "must be an ISO 8601 timestamp string")
        try:
            return parse_datetime(value)
        except ValueError:
            raise FieldError(key, f"is not an ISO 8601 timestamp: {value[:40]!r}") from None
        except OverflowError:  # e.g. year 1 at UTC+1: before the first instant in UTC
            raise FieldError(key, f"is out of range in UTC: {value[:40]!r}") from None

    return check


#: The shape of ``releaseHistory``, every key optional:
#:
#: - ``introducedBy`` / ``lastChangedBy``: the commit that added the message and the one
#:   that last changed it, each a ``COMMIT`` object;
#: - ``wordings``: every message template the site had, oldest first, each
#:   ``{"message", "pattern", "firstRelease", "lastRelease", "introducedBy",
#:   "lastChangedBy"}`` (the wording whose ``pattern`` is the record's ``messagePattern``
#:   is the current one; the others are aliases the matcher compiles beside it);
#: - ``locations``: where the site was, release range by release range, oldest first,
#:   each ``{"path", "line", "firstRelease", "lastRelease"}`` (what a traceback's file and
#:   line numbers are compared with).
#:
#: A ``COMMIT`` is ``{"sha", "subject", "date", "url"}`` (``url`` optional). Unknown keys
#: are kept (a newer file), checked only as JSON.
HISTORY_LIMITS = {"wordings": 500, "locations": 5000}
_COMMIT_KEYS = {"sha": 64, "subject": 500, "date": 40, "url": 1000}
_WORDING_TEXT = {"message": None, "pattern": None, "firstRelease": 100, "lastRelease": 100}
_LOCATION_TEXT = {"path": 500, "firstRelease": 100, "lastRelease": 100}


def _check_short(key: str, name: str, value: Any, limit: int | None, *, null: bool) -> None:
    if value is None and null:
        return
    if not isinstance(value, str):
        raise FieldError(key, f"{name} must be a string")
    _check_text(key, value)
    if limit is not None and len(value) > limit:
        raise FieldError(key, f"{name} is longer than {limit} characters")


def _check_commit(key: str, name: str, value: Any) -> None:
    if value is None:
        return
    if type(value) is not dict:
        raise FieldError(key, f"{name} must be an object or null")
    for part, limit in _COMMIT_KEYS.items():
        if part in value:
            _check_short(key, f"{name}.{part}", value[part], limit, null=part == "url")
        elif part != "url":
            raise FieldError(key, f"{name}.{part} is missing")


def _check_items(key: str, name: str, items: Any, check: Callable[[str, Any], None]) -> None:
    if not isinstance(items, list):
        raise FieldError(key, f"{name} must be a list")
    if len(items) > HISTORY_LIMITS[name]:
        raise FieldError(key, f"{name} has more than {HISTORY_LIMITS[name]} items")
    for index, item in enumerate(items):
        where = f"{name}[{index}]"
        if type(item) is not dict:
            raise FieldError(key, f"{where} must be an object")
        check(where, item)


def _history_checker(field: Field) -> Checker:
    key = field.key

    def wording(where: str, item: dict[str, Any]) -> None:
        for part, limit in _WORDING_TEXT.items():
            required = part in {"message", "pattern"}
            if part not in item and required:
                raise FieldError(key, f"{where}.{part} is missing")
            if part in item:
                _check_short(key, f"{where}.{part}", item[part], limit, null=not required)
        if "pattern" in item and not item["pattern"].strip():
            raise FieldError(key, f"{where}.pattern must not be empty")
        for part in ("introducedBy", "lastChangedBy"):
            _check_commit(key, f"{where}.{part}", item.get(part))

    def location(where: str, item: dict[str, Any]) -> None:
        for part, limit in _LOCATION_TEXT.items():
            if part in item or part == "path":
                _check_short(key, f"{where}.{part}", item.get(part), limit, null=part != "path")
        line = item.get("line")
        if isinstance(line, bool) or not isinstance(line, int) or not 0 <= line <= MAX_INT_COLUMN:
            raise FieldError(key, f"{where}.line must be a line number")

    def check(value: Any) -> Any:
        if type(value) is not dict:
            raise FieldError(key, "must be an object or null")
        _check_json_value(key, value)
        for part in ("introducedBy", "lastChangedBy"):
            _check_commit(key, part, value.get(part))
        if "wordings" in value:
            _check_items(key, "wordings", value["wordings"], wording)
        if "locations" in value:
            _check_items(key, "locations", value["locations"], location)
        return value

    return check


_MAKERS = {
    "str": _str_checker,
    "int": _int_checker,
    "list": _list_checker,
    "datetime": _datetime_checker,
    "history": _history_checker,
}
CHECKERS: dict[str, Checker] = {f.key: _checker(f, _MAKERS[f.kind](f)) for f in FIELDS}
_PLAN: tuple[tuple[str, str, bool, Checker], ...] = tuple(
    (f.key, f.attr, f.required and not f.optional, CHECKERS[f.key]) for f in FIELDS
)


def clean_value(field: Field, value: Any) -> Any:
    """Check one incoming value against its field; return it in model form."""
    return CHECKERS[field.key](value)


def incoming_value(record: Any, key: str) -> Any:
    """The value the newest import brought for the conflicted field ``key`` of ``record``
    (its ``conflicts`` hold dataset values), in model form. Raises ``KeyError`` without
    such a conflict, ``FieldError`` when the value does not pass the field's check."""
    return clean_value(BY_KEY[key], record.conflicts[key].get("incoming"))


def parse_record(obj: Any) -> tuple[dict[str, Any], str]:
    """Validate one decoded JSONL line; return (model attrs incl. ``extra``, datasetVersion).

    The one validator of an incoming record: the importer, the admin's conflict form and
    ``kb.records.validation`` all check through ``CHECKERS``. Raises ``FieldError`` naming the
    first bad field.
    """
    if type(obj) is not dict:
        raise FieldError("-", f"line is a JSON {type(obj).__name__}, not an object")
    record = obj.get("record")
    if type(record) is not dict:
        raise FieldError("record", "missing, or not an object")
    version = obj.get("datasetVersion", "")
    if type(version) is not str or len(version) > 40:
        raise FieldError("datasetVersion", "must be a string of at most 40 characters")
    _check_text("datasetVersion", version)
    attrs = {}
    for key, attr, required, check in _PLAN:
        if key in record:
            attrs[attr] = check(record[key])
        elif required:
            raise FieldError(key, "is missing")
    extra = {k: v for k, v in record.items() if k not in BY_KEY} if len(record) > len(attrs) else {}
    for key, value in extra.items():
        _check_text(key, key)
        _check_json_value(key, value)
    attrs["extra"] = extra
    return attrs, version


def _check_json_value(key: str, value: Any) -> None:
    """JSON both backends store alike: finite numbers, text without NUL or surrogates
    (in keys too: PostgreSQL's jsonb refuses ``\\u0000`` anywhere)."""
    if isinstance(value, float) and not math.isfinite(value):
        raise FieldError(key, "NaN or Infinity is not valid JSON")
    if isinstance(value, str):
        _check_text(key, value)
    elif isinstance(value, list):
        for item in value:
            _check_json_value(key, item)
    elif isinstance(value, dict):
        for name, item in value.items():
            _check_text(key, name)
            _check_json_value(key, item)


def to_dataset_value(field: Field, value: Any) -> Any:
    if field.kind == "datetime":
        return format_datetime(value)
    if field.kind == "list":
        return list(value or [])
    return value


def record_to_dataset(record: Any) -> dict[str, Any]:
    """A model instance (or anything with the attributes) as the dataset's record object
    (an optional field only when it holds something)."""
    out = {}
    for f in FIELDS:
        value = to_dataset_value(f, getattr(record, f.attr))
        if f.optional and not value:
            continue
        out[f.key] = value
    out.update(record.extra or {})
    return out


def record_to_line(record: Any) -> dict[str, Any]:
    return {"record": record_to_dataset(record), "datasetVersion": record.dataset_version}
