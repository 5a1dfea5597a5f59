"""Which files of a source are read, and in which language.

Test code (and test helpers, benchmarks, examples, docs), vendored and generated files
and hidden directories (CI scripts) are left out by default: the messages a user pastes
come from the code that runs, and test code is full of messages nobody sees (a source may
opt in to tests). The rules follow what the dataset's extractor left out, and skip none
of the files its records come from: the test suite checks real paths of all five
repositories.
"""

from __future__ import annotations

import re

__all__ = ["LANGUAGES", "language_of", "skip_reason"]

#: File extension to language (the extractor module of the same name).
LANGUAGES = {".py": "python", ".go": "go", ".rs": "rust", ".java": "java", ".scala": "scala"}

_TEST_PATH = re.compile(
    # directories of tests, test helpers, benchmarks, examples and docs (``e2e_test``,
    # ``test-utils``, ``jmh-benchmarks``, ``src/testFixtures`` count as such too)
    r"(^|/)(tests?|testing|testdata|testutils?|test[-_][^/]*|[^/]*[-_]tests?|it|e2e|"
    r"integration[-_]?tests?|integrationTest|testFixtures|mocks?|fixtures?|"
    r"benches|bench|benchmarks?|jmh[^/]*|examples?|_examples|docs?)/"
    # test files by each language's naming rule
    r"|(^|/)(test_[^/]*\.py|[^/]*_tests?\.py|tests\.py|conftest\.py|[^/]*_test\.go|"
    r"[^/]*_tests?\.rs|test_utils\.rs|[^/]*Tests?\.java|[^/]*IT\.java|"
    r"[^/]*(Spec|Suite|Test)\.scala)$"
)
# CI and editor configuration (``.github/scripts``) is not code a deployment runs.
_HIDDEN = re.compile(r"(^|/)\.[^/]+/")
_VENDORED = re.compile(r"(^|/)(vendor|third_party|node_modules|\.git)/")
_GENERATED_NAME = re.compile(r"\.pb\.go$|_pb2\.py$|\.pb\.gw\.go$|_generated\.[a-z]+$")
# A generator's mark in a comment line of the head (not in a string: a message may say it).
_GENERATED_HEAD = re.compile(rb"(?m)^[ \t]*(?://|#|/?\*|--)[^\n]*(?:DO NOT EDIT|@generated)")
#: How much of a file's start is searched for a generated-file header.
_HEAD_BYTES = 2048


def language_of(path: str) -> str | None:
    """The language whose extractor reads ``path``, or ``None`` when none does."""
    dot = path.rfind(".")
    return LANGUAGES.get(path[dot:]) if dot >= 0 else None


def skip_reason(path: str, head: bytes = b"", *, tests: bool = False) -> str | None:
    """Why ``path`` is not read ("vendored", "hidden", "test", "generated"), or ``None`` to
    read it.
    ``head`` is the file's first bytes, where generators write their header."""
    if _VENDORED.search(path):
        return "vendored"
    if _HIDDEN.search(path):
        return "hidden"
    if not tests and _TEST_PATH.search(path):
        return "test"
    if _GENERATED_NAME.search(path) or _GENERATED_HEAD.search(head[:_HEAD_BYTES]):
        return "generated"
    return None
