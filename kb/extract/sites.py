"""What an extractor finds in one file: a `Site`, in the source's own terms.

A site keeps the message as the code writes it (a template in the source's placeholder
notation: Rust ``{}``/``{name}``/``{:?}``, Python ``%s``/``%(name)s``/``{}``/``{expr}``,
Go and Java ``%v``/``%s``, SLF4J ``{}``, Scala ``$x``/``${x}``), with every non-literal
part of a concatenation written as ``{}``; turning it into a pattern is
`kb.extract.records`' job, the same for every language.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

__all__ = ["MIN_LITERAL", "ErrorType", "Notation", "Severity", "Site"]

#: A message with fewer characters of literal text than this (``"{}"``, ``"%v: %v"``,
#: ``"Error: " + e``) says nothing a reader could look up: the dataset leaves such sites
#: out, and so does every extractor.
MIN_LITERAL = 8


class ErrorType(StrEnum):
    """The dataset's ``errorType`` kinds."""

    EXCEPTION = "exception"
    ERROR_RETURN = "error_return"
    PANIC = "panic"
    LOG = "log"
    ERROR_CODE = "error_code"


class Severity(StrEnum):
    """The dataset's ``severity`` values: ``fatal`` for panics and fatal logs, ``warning``
    for warnings, ``error`` otherwise."""

    FATAL = "fatal"
    ERROR = "error"
    WARNING = "warning"


class Notation(StrEnum):
    """How the template writes its placeholders (which ones `records` turns into groups)."""

    RUST = "rust"  # {} {name} {:?} {0}; {{ and }} are literal braces
    PYTHON_PERCENT = "python-percent"  # %s %d %(name)s; %% is a literal percent
    PYTHON_FORMAT = "python-format"  # {} {0} {name} {name!r:>10} (str.format and f-strings)
    PRINTF = "printf"  # Go and Java: %v %s %d %w %q %x %5.2f; %% literal
    SLF4J = "slf4j"  # {} only
    SCALA = "scala"  # $name ${expr}
    JAVA_MESSAGE_FORMAT = "java-message-format"  # {0} {1,number}
    PLAIN = "plain"  # no placeholders besides the concatenation holes written {}


@dataclass(frozen=True, slots=True)
class Site:
    """One raising, returning or logging site with a message.

    ``line`` is the 1-based line where the raising call, macro or attribute starts (the
    dataset's ``lineNumber``); ``end_line`` where it ends. ``function`` is the qualified
    name of the enclosing function (``Class.method``, ``impl Type::fn``, ``outer.inner``;
    empty at module level): with the path and the template it is the site's identity,
    which survives line moves and unrelated edits.
    """

    path: str  # repository-relative, with forward slashes
    line: int
    end_line: int
    template: str
    notation: Notation
    error_type: ErrorType
    severity: Severity = Severity.ERROR
    error_class: str | None = None  # exception class, Rust error type/variant, Go sentinel
    error_code: str | None = None  # gRPC code, Kafka Errors name, SQLAlchemy code=
    http_status: int | None = None
    function: str = ""
    call: str = ""  # what raised it, as written: "bail!", "fmt.Errorf", "raise ValueError"
