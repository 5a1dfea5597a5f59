"""One release from the Python package index: ``pypi:NAME==VERSION``.

The release's files are listed with the index's JSON API and one is downloaded (the
sdist, else a pure-Python wheel), its SHA-256 checked against the index's, into a
temporary directory; it is then read as an archive. Not ``pip download``: to name the
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
from typing import Any

from kb.sources.readers.base import SourceError

__all__ = ["download_release", "parse_spec"]

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


def _get(url: str, limit: int) -> bytes:
    if not url.startswith("https://"):
        raise SourceError(f"{url}: the package index must be reached over https")
    try:
        with urllib.request.urlopen(url, timeout=TIMEOUT_SECONDS) as answer:  # noqa: S310
            data: bytes = answer.read(limit + 1)
    except urllib.error.HTTPError as error:
        raise SourceError(f"{url}: the package index answered {error.code}") from None
    except (urllib.error.URLError, OSError) as error:
        raise SourceError(f"{url}: the package index cannot be reached ({error})") from None
    if len(data) > limit:
        raise SourceError(f"{url}: larger than {limit} bytes: refused")
    return data


def _pick(files: list[dict[str, Any]]) -> dict[str, Any]:
    sdists = [f for f in files if f.get("packagetype") == "sdist"]
    wheels = [f for f in files if str(f.get("filename", "")).endswith("-none-any.whl")]
    for candidate in (*sdists, *wheels):
        if str(candidate.get("filename", "")).lower().endswith((".tar.gz", ".zip", ".whl")):
            return candidate
    raise SourceError("the release has no source archive and no pure-Python wheel")


def download_release(name: str, version: str, target: Path, *, index_url: str,
                     max_bytes: int) -> Path:  # fmt: skip
    """Download ``name==version``'s sdist (or pure-Python wheel) into ``target``; returns
    the file's path. Nothing in it is unpacked, built or run here."""
    base = index_url.rstrip("/")
    meta_url = f"{base}/{urllib.parse.quote(name)}/{urllib.parse.quote(version)}/json"
    try:
        meta = json.loads(_get(meta_url, 16 * 1024 * 1024))
    except ValueError:
        raise SourceError(f"{meta_url}: not JSON") from None
    chosen = _pick(meta.get("urls") or [])
    filename = Path(str(chosen["filename"])).name  # never a path the index chose
    data = _get(str(chosen["url"]), max_bytes)
    expected = (chosen.get("digests") or {}).get("sha256")
    if expected and hashlib.sha256(data).hexdigest() != expected:
        raise SourceError(f"{filename}: its SHA-256 is not the index's: refused")
    path = target / filename
    path.write_bytes(data)
    return path
