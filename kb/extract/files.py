"""Which files of a source are read, and in which language.

Test code, vendored and generated files and examples are left out by default: the
messages a user pastes come from the code that runs, and test code is full of messages
nobody sees (a source may opt in to tests).
"""

from __future__ import annotations

import re

__all__ = ["LANGUAGES", "language_of", "skip_reason"]

#: File extension to language (the extractor module of the same name).
LANGUAGES = {".py": "python", ".go": "go", ".rs": "rust", ".java": "java", ".scala": "scala"}

_TEST_PATH = re.compile(
    r"(^|/)(tests?|testing|testdata|test_utils|it|integration[-_]tests?|e2e|benches|benchmarks?|"
    r"examples?|docs?|fixtures?|mocks?)/"
    r"|(^|/)(test_[^/]*\.py|[^/]*_tests?\.py|conftest\.py|[^/]*_test\.go|[^/]*Tests?\.java|"
    r"[^/]*(Spec|Suite|Test)\.scala)$"
)
_VENDORED = re.compile(r"(^|/)(vendor|third_party|node_modules|\.git)/")
_GENERATED_NAME = re.compile(r"\.pb\.go$|_pb2\.py$|\.pb\.gw\.go$|_generated\.[a-z]+$")
_GENERATED_HEAD = re.compile(rb"DO NOT EDIT|@generated|Code generated .* DO NOT EDIT")
#: How much of a file's start is searched for a generated-file header.
_HEAD_BYTES = 2048


def language_of(path: str) -> str | None:
    """The language whose extractor reads ``path``, or ``None`` when none does."""
    dot = path.rfind(".")
    return LANGUAGES.get(path[dot:]) if dot >= 0 else None


def skip_reason(path: str, head: bytes = b"", *, tests: bool = False) -> str | None:
    """Why ``path`` is not read ("test", "vendored", "generated"), or ``None`` to read it.
    ``head`` is the file's first bytes, where generators write their header."""
    if _VENDORED.search(path):
        return "vendored"
    if not tests and _TEST_PATH.search(path):
        return "test"
    if _GENERATED_NAME.search(path) or _GENERATED_HEAD.search(head[:_HEAD_BYTES]):
        return "generated"
    return None
