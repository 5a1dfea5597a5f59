"""What every reader returns: a `Snapshot` of files to read."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

__all__ = ["FileEntry", "Refused", "Snapshot", "SourceError"]


class SourceError(Exception):
    """The source cannot be read (not a repository, an unknown revision, a broken or
    hostile archive, an unreachable index): the job fails with this message, and nothing
    learned before is touched."""


@dataclass(frozen=True, slots=True)
class Refused:
    """One file left out (an archive member refused, a blob the repository lacks), and
    why (shown in the job's report)."""

    path: str
    reason: str


@dataclass(frozen=True, slots=True)
class FileEntry:
    """One file of the snapshot: its path (forward slashes, relative to the source's root)
    and its size in bytes as the source declares it (before reading)."""

    path: str
    size: int
    ident: str = ""  # the reader's handle on the bytes: a blob id, an archive member's name


@dataclass(slots=True)
class Snapshot:
    """The files of one revision of a source, to be read.

    ``files`` are the files to read (all of them, or with ``partial`` only those changed
    since the revision learned before); ``removed`` the paths gone since then (renames
    included, as their old path); ``web_url`` the page links to sites start from when the
    source names none; ``read`` yields the bytes of the files asked for, in order (one
    ``git cat-file --batch`` for a repository, the archive's members in place).
    """

    revision: str
    files: list[FileEntry]
    reader: Callable[[list[FileEntry]], Iterator[tuple[FileEntry, bytes]]]
    partial: bool = False
    removed: list[str] = field(default_factory=list)
    renamed: dict[str, str] = field(default_factory=dict)  # new path -> old path
    refused: list[Refused] = field(default_factory=list)
    web_url: str = ""  # the repository's GitHub page, from its origin remote (git only)
    # Where a release's files can be read when there is no repository to link to: a
    # template with {path}, {line}, {start} and {end} (kb.extract.records.to_record).
    link: str = ""

    def read(self, files: list[FileEntry]) -> Iterator[tuple[FileEntry, bytes]]:
        """Each of ``files`` with its bytes, in order."""
        return self.reader(files)
