"""Source archives (``.tar.gz``, ``.tgz``, ``.tar``, ``.zip``, ``.whl``) read in place.

Nothing is extracted: each member's bytes are read from the archive into memory when
its file is learned, so no member can write anywhere. A member is still refused, with
its reason, when extracting it would have been dangerous or it is not a file: a path
outside the archive (absolute, ``..``, a drive letter: zip-slip), a symbolic or hard
link, a device, FIFO or other special file. The archive as a whole is refused when it
holds more than ``max_files`` members or unpacks to more than ``max_bytes`` (counted as
the bytes are decompressed, so a header that lies about a size changes nothing): a
size or file-count bomb. An sdist's single top directory (``SQLAlchemy-2.0.36/``) is
taken off every path, so paths read as the repository's.
"""

from __future__ import annotations

import gzip
import io
import stat
import tarfile
import zipfile
from collections.abc import Iterator
from pathlib import Path, PurePosixPath
from typing import IO

from kb.sources.readers.base import FileEntry, Refused, Snapshot, SourceError

__all__ = ["ARCHIVE_SUFFIXES", "is_archive", "snapshot"]

ARCHIVE_SUFFIXES = (".tar.gz", ".tgz", ".tar", ".zip", ".whl")


def is_archive(name: str) -> bool:
    return name.lower().endswith(ARCHIVE_SUFFIXES)


class _Budget:
    """Decompressed bytes left: every read of the archive counts against it."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.used = 0

    def take(self, n: int) -> None:
        self.used += n
        if self.used > self.max_bytes:
            raise SourceError(
                f"the archive unpacks to more than {self.max_bytes} bytes (a size bomb?): refused"
            )


class _Counted(io.RawIOBase):
    """A stream whose every byte read is taken from a `_Budget`."""

    def __init__(self, raw: IO[bytes] | gzip.GzipFile, budget: _Budget) -> None:
        self.raw, self.budget = raw, budget

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        data = self.raw.read(len(buffer))
        self.budget.take(len(data))
        buffer[: len(data)] = data
        return len(data)


def _unsafe_path(name: str) -> str | None:
    """Why a member's name must not be unpacked, or ``None``."""
    if "\0" in name:
        return "a NUL byte in its name"
    if name.startswith(("/", "\\")) or (len(name) > 1 and name[1] == ":"):
        return "an absolute path"
    if ".." in PurePosixPath(name.replace("\\", "/")).parts:
        return "a path outside the archive (..)"
    return None


def _tar_refusal(member: tarfile.TarInfo) -> str | None:
    if member.issym() or member.islnk():
        return f"a link (to {member.linkname})"
    if member.isdir():
        return ""  # a directory: nothing to read, nothing to report
    if not member.isfile():
        return "not a regular file (a device, FIFO or other special file)"
    return None


def _zip_refusal(info: zipfile.ZipInfo) -> str | None:
    mode = info.external_attr >> 16
    if info.is_dir():
        return ""
    if mode and stat.S_ISLNK(mode):
        return "a link"
    if mode and not stat.S_ISREG(mode):
        return "not a regular file (a device, FIFO or other special file)"
    return None


def snapshot(
    path: Path, *, max_bytes: int, max_files: int, revision: str = "", browse_url: str = ""
) -> Snapshot:
    """The files of the archive at ``path``; ``revision`` names what it is (a release's
    version; by default its file name); ``browse_url`` the page where the archive's members
    can be read, each at ``{browse_url}/{member}#line.N`` (the package index's inspector),
    which gives the records their links."""
    if not path.is_file():
        raise SourceError(f"{path}: no such file")
    name = path.name.lower()
    if not is_archive(name):
        raise SourceError(f"{path}: not a .tar.gz, .tgz, .tar, .zip or .whl archive")
    is_zip = name.endswith((".zip", ".whl"))
    try:
        members, refused = (_zip_members if is_zip else _tar_members)(path, max_bytes, max_files)
    except (tarfile.TarError, zipfile.BadZipFile, EOFError, OSError) as error:
        raise SourceError(f"{path.name}: not a readable archive ({error})") from None
    prefix = _common_top(list(members)) if not name.endswith(".whl") else ""
    files = [FileEntry(member[len(prefix) :], size, member) for member, size in members.items()]

    def read(entries: list[FileEntry]) -> Iterator[tuple[FileEntry, bytes]]:
        wanted = {entry.ident: entry for entry in entries}
        reader = _zip_read if is_zip else _tar_read
        try:
            yield from reader(path, wanted, max_bytes)
        except (tarfile.TarError, zipfile.BadZipFile, EOFError, OSError) as error:
            raise SourceError(f"{path.name}: not a readable archive ({error})") from None

    link = f"{browse_url.rstrip('/')}/{prefix}{{path}}#line.{{line}}" if browse_url else ""
    return Snapshot(
        revision=revision or path.name, files=files, reader=read, refused=refused, link=link
    )


def _common_top(names: list[str]) -> str:
    """``"top/"`` when every member is under one top directory, else ``""``."""
    tops = {n.split("/", 1)[0] for n in names}
    if len(tops) == 1 and all("/" in n for n in names):
        return f"{tops.pop()}/"
    return ""


def _check_count(count: int, max_files: int) -> None:
    if count > max_files:
        raise SourceError(
            f"the archive holds more than {max_files} members (a file-count bomb?): refused"
        )


def _tar_open(path: Path, budget: _Budget) -> tarfile.TarFile:
    raw = open(path, "rb")  # noqa: SIM115 - closed with the tar file's stream
    if path.name.lower().endswith((".gz", ".tgz")):
        stream: IO[bytes] = io.BufferedReader(_Counted(gzip.GzipFile(fileobj=raw), budget))
    else:
        stream = io.BufferedReader(_Counted(raw, budget))
    return tarfile.open(fileobj=stream, mode="r|")


def _tar_members(
    path: Path, max_bytes: int, max_files: int
) -> tuple[dict[str, int], list[Refused]]:
    members: dict[str, int] = {}
    refused: list[Refused] = []
    count = 0
    with _tar_open(path, _Budget(max_bytes)) as archive:
        for member in archive:
            count += 1
            _check_count(count, max_files)
            reason = _unsafe_path(member.name) or _tar_refusal(member)
            if reason:
                refused.append(Refused(member.name, reason))
            elif reason is None:
                members[member.name.removeprefix("./")] = member.size
    return members, refused


def _tar_read(
    path: Path, wanted: dict[str, FileEntry], max_bytes: int
) -> Iterator[tuple[FileEntry, bytes]]:
    with _tar_open(path, _Budget(max_bytes)) as archive:
        for member in archive:
            entry = wanted.get(member.name.removeprefix("./"))
            if entry is None or not member.isfile():
                continue
            handle = archive.extractfile(member)
            if handle is not None:
                yield entry, handle.read()


def _zip_members(
    path: Path, max_bytes: int, max_files: int
) -> tuple[dict[str, int], list[Refused]]:
    members: dict[str, int] = {}
    refused: list[Refused] = []
    with zipfile.ZipFile(path) as archive:
        infos = archive.infolist()
        _check_count(len(infos), max_files)
        declared = 0
        for info in infos:
            reason = _unsafe_path(info.filename) or _zip_refusal(info)
            if reason:
                refused.append(Refused(info.filename, reason))
            elif reason is None:
                members[info.filename] = info.file_size
                declared += info.file_size
        if declared > max_bytes:
            _Budget(max_bytes).take(declared)
    return members, refused


def _zip_read(
    path: Path, wanted: dict[str, FileEntry], max_bytes: int
) -> Iterator[tuple[FileEntry, bytes]]:
    budget = _Budget(max_bytes)
    with zipfile.ZipFile(path) as archive:
        for name, entry in wanted.items():
            with archive.open(name) as handle:
                # at most one byte past what the member declares: a lying header stops here
                data = handle.read(entry.size + 1)
            budget.take(len(data))
            if len(data) > entry.size:
                raise SourceError(f"{name}: larger than its header says: refused")
            yield entry, data
