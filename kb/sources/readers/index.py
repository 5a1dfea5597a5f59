"""One release from the Python package index: ``pypi:NAME==VERSION``.

The release's files are listed by the index's simple API in its JSON form (PEP 691: what
pip reads, served by every index and mirror) and one is downloaded (the sdist, else a
pure-Python wheel), its SHA-256 checked against the index's, into a temporary directory;
it is then read as an archive. Not ``pip download``: to name the
dependencies of an sdist, pip prepares its metadata, which runs the package's build
backend (``setup.py``), and nothing in a source may run.
"""

from __future__ import annotations

import hashlib
import json
import re
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any, NamedTuple

from kb.sources.readers.base import SourceError

__all__ = [
    "Release",
    "browse_url",
    "download_file",
    "download_release",
    "parse_spec",
    "release_files",
]

_NAME = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?$")
_VERSION = re.compile(r"^[A-Za-z0-9][A-Za-z0-9.+!_-]*$")
#: The longest the index may take to answer one request.
TIMEOUT_SECONDS = 60


def parse_spec(source: str) -> tuple[str, str]:
    """``pypi:NAME==VERSION`` -> (name, version); a clear error for anything else."""
    spec = source.removeprefix("pypi:")
    name, sep, version = spec.partition("==")
    if not sep or not _NAME.match(name) or not _VERSION.match(version):
        raise SourceError(f"{source}: expected pypi:NAME==VERSION (such as pypi:django==5.2.8)")
    return name, version


#: The simple API's JSON form (PEP 691).
_SIMPLE_JSON = "application/vnd.pypi.simple.v1+json"


def _normalise(name: str) -> str:
    """A project name as the index compares it (PEP 503)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def _get(url: str, limit: int, *, accept: str = "*/*") -> bytes:
    if not url.startswith("https://"):
        raise SourceError(f"{url}: the package index must be reached over https")
    request = urllib.request.Request(url, headers={"Accept": accept})  # noqa: S310 - https only, above
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT_SECONDS) as answer:  # noqa: S310
            data: bytes = answer.read(limit + 1)
    except urllib.error.HTTPError as error:
        raise SourceError(f"{url}: the package index answered {error.code}") from None
    except (urllib.error.URLError, OSError) as error:
        raise SourceError(f"{url}: the package index cannot be reached ({error})") from None
    if len(data) > limit:
        raise SourceError(f"{url}: larger than {limit} bytes: refused")
    return data


def _release_of(filename: str) -> tuple[str, str, str] | None:
    """(project, version, kind) of a release file's name, ``None`` for a file that is
    neither an sdist nor a pure-Python wheel (built wheels hold no source to read)."""
    for ext in (".tar.gz", ".zip"):
        if filename.endswith(ext):
            project, _, version = filename.removesuffix(ext).rpartition("-")
            return project, version, "sdist"
    if filename.endswith("-none-any.whl"):
        project, version, *_rest = filename.split("-")
        return project, version, "wheel"
    return None


def _pick(files: list[dict[str, Any]], name: str, version: str) -> dict[str, Any]:
    """The sdist of ``name==version``, else its pure-Python wheel."""
    found: dict[str, dict[str, Any]] = {}
    for entry in files:
        release = _release_of(str(entry.get("filename", "")))
        if release is None or entry.get("yanked"):
            continue
        project, file_version, kind = release
        if _normalise(project) == _normalise(name) and file_version == version:
            found.setdefault(kind, entry)
    chosen = found.get("sdist") or found.get("wheel")
    if chosen is None:
        raise SourceError(
            f"{name}=={version}: the index has no source archive and no pure-Python wheel of it"
        )
    return chosen


class Release(NamedTuple):
    """A downloaded release file, and where its members can be read on the web ("" when
    the index has no such page)."""

    path: Path
    browse_url: str


#: PyPI's file host, and the page of its inspector that shows a release file's members
#: with line anchors: the one place a release's code can be linked to, whatever its
#: repository's tags are called.
_PYPI_FILES = "https://files.pythonhosted.org/packages/"
_PYPI_INSPECTOR = "https://inspector.pypi.io/project/{name}/{version}/packages/{rest}"


def browse_url(name: str, version: str, file_url: str) -> str:
    """The inspector page of a release file PyPI hosts, else ""."""
    if not file_url.startswith(_PYPI_FILES):
        return ""
    rest = file_url.removeprefix(_PYPI_FILES).split("#", 1)[0]
    quoted = urllib.parse.quote(_normalise(name)), urllib.parse.quote(version)
    return _PYPI_INSPECTOR.format(name=quoted[0], version=quoted[1], rest=rest)


def _listing(name: str, index_url: str) -> tuple[str, list[dict[str, Any]]]:
    project_url = f"{index_url.rstrip('/')}/{urllib.parse.quote(_normalise(name))}/"
    try:
        listing = json.loads(_get(project_url, 64 * 1024 * 1024, accept=_SIMPLE_JSON))
    except ValueError:
        raise SourceError(f"{project_url}: not the simple API's JSON") from None
    files = listing.get("files") if isinstance(listing, dict) else None
    return project_url, [f for f in files or [] if isinstance(f, dict)]


def release_files(name: str, *, index_url: str) -> dict[str, dict[str, Any]]:
    """Every version of ``name`` the index holds a readable file of (an sdist, else a
    pure-Python wheel; yanked files left out): version -> the index's entry of that file,
    its ``url`` made absolute."""
    project_url, files = _listing(name, index_url)
    versions: dict[str, dict[str, Any]] = {}
    for entry in files:
        release = _release_of(str(entry.get("filename", "")))
        if release is None or entry.get("yanked"):
            continue
        project, version, _kind = release
        if _normalise(project) != _normalise(name) or version in versions:
            continue
        chosen = _pick(files, name, version)
        versions[version] = {**chosen, "url": urllib.parse.urljoin(project_url, str(chosen["url"]))}
    return versions


def download_file(name: str, version: str, chosen: dict[str, Any], target: Path, *,
                  max_bytes: int) -> Release:  # fmt: skip
    """Download one release file the index listed (``release_files``) into ``target``,
    its SHA-256 checked against the index's."""
    filename = Path(str(chosen["filename"])).name  # never a path the index chose
    file_url = str(chosen["url"])
    data = _get(file_url, max_bytes)
    expected = (chosen.get("hashes") or {}).get("sha256")
    if expected and hashlib.sha256(data).hexdigest() != expected:
        raise SourceError(f"{filename}: its SHA-256 is not the index's: refused")
    path = target / filename
    path.write_bytes(data)
    return Release(path, browse_url(name, version, file_url))


def download_release(name: str, version: str, target: Path, *, index_url: str,
                     max_bytes: int) -> Release:  # fmt: skip
    """Download ``name==version``'s sdist (or pure-Python wheel) into ``target``. Nothing
    in it is unpacked, built or run here."""
    project_url, files = _listing(name, index_url)
    chosen = _pick(files, name, version)
    chosen = {**chosen, "url": urllib.parse.urljoin(project_url, str(chosen["url"]))}
    return download_file(name, version, chosen, target, max_bytes=max_bytes)
