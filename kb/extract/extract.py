"""One entry point for every language: a file's path and bytes in, its sites out."""

from __future__ import annotations

from collections.abc import Callable

from kb.extract import go, java, python, rust, scala
from kb.extract.files import language_of
from kb.extract.sites import Site

__all__ = ["MAX_FILE_BYTES", "NotText", "extract_file"]

#: Past this size a file is not source a person wrote (a generated table, a bundle).
MAX_FILE_BYTES = 2 * 1024 * 1024

_EXTRACTORS: dict[str, Callable[[str, str], list[Site]]] = {
    "python": python.sites,
    "go": go.sites,
    "rust": rust.sites,
    "java": java.sites,
    "scala": scala.sites,
}


class NotText(ValueError):
    """The file is too large or not UTF-8: skipped, and counted by the caller."""


def extract_file(path: str, data: bytes) -> list[Site]:
    """The error sites of one file (``[]`` for a language no extractor reads). Raises
    `NotText` for a file past `MAX_FILE_BYTES` or not UTF-8."""
    language = language_of(path)
    if language is None:
        return []
    if len(data) > MAX_FILE_BYTES:
        raise NotText(f"larger than {MAX_FILE_BYTES} bytes")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise NotText(f"not UTF-8 (byte {error.start})") from None
    return _EXTRACTORS[language](path, text)
