"""A git repository read through git's plumbing, never its porcelain or a work tree.

Every call is an argument list (no shell), revisions are resolved with
``--end-of-options`` first so that none can be read as an option, and git runs with no
system or global configuration, hooks pointed at ``/dev/null``, no external diff or
textconv, no fsmonitor and no terminal prompt: a repository someone else wrote cannot
make git run anything. Remotes (``https://``, ``ssh://``, ``git@host:path``) are mirrored
into a cache directory and fetched again on each learn.
"""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path

from kb.sources.readers.base import FileEntry, Refused, Snapshot, SourceError

__all__ = [
    "GitRepository", "git_dir_of", "github_page", "is_remote", "mirror_remote", "snapshot",
]  # fmt: skip

#: Options every git call starts with: nothing the repository configures may run code.
_SAFE_CONFIG = (
    "-c", "core.hooksPath=/dev/null",
    "-c", "core.fsmonitor=false",
    "-c", "diff.external=",
    "-c", "protocol.ext.allow=never",
    "-c", "safe.directory=*",
)  # fmt: skip
_REMOTE = re.compile(r"^(https://|ssh://|git@[A-Za-z0-9.-]+:)[^\s]+$")
#: A GitHub remote in any of the forms git accepts, with its owner and name.
_GITHUB = re.compile(
    r"^(?:https://github\.com/|ssh://git@github\.com/|git@github\.com:)"
    r"([A-Za-z0-9_.-]+)/([A-Za-z0-9_.-]+?)(?:\.git)?/?$"
)
_HEX = re.compile(r"^[0-9a-f]{40}([0-9a-f]{24})?$")
#: The longest any git call may run before the job fails (a clone of a large remote).
TIMEOUT_SECONDS = 3600


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(
        GIT_CONFIG_NOSYSTEM="1",
        GIT_CONFIG_GLOBAL=os.devnull,
        GIT_TERMINAL_PROMPT="0",
        GIT_ASKPASS="",
        SSH_ASKPASS="",
        GIT_NO_REPLACE_OBJECTS="1",
        LC_ALL="C",
    )
    return env


def is_remote(source: str) -> bool:
    """An HTTPS or SSH remote URL (anything else is a local path)."""
    return bool(_REMOTE.match(source))


def _git(args: Sequence[str], *, git_dir: Path | None = None) -> bytes:
    command = ["git", *_SAFE_CONFIG]
    if git_dir is not None:
        command.append(f"--git-dir={git_dir}")
    command.extend(args)
    try:
        done = subprocess.run(  # an argument list, never a shell string
            command, capture_output=True, env=_env(), timeout=TIMEOUT_SECONDS, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        raise SourceError(f"git could not run: {error}") from None
    if done.returncode != 0:
        message = done.stderr.decode("utf-8", "replace").strip().splitlines()
        raise SourceError(f"git {args[0]}: {message[-1] if message else 'failed'}")
    return done.stdout


def github_page(remote: str) -> str:
    """The web page of a GitHub remote (``https://github.com/OWNER/NAME``), or ``""`` for
    any other host: only GitHub's ``/blob/COMMIT/PATH#Lm-Ln`` links are known to work."""
    found = _GITHUB.match(remote.strip())
    return f"https://github.com/{found[1]}/{found[2]}" if found else ""


def git_dir_of(path: Path) -> Path:
    """The git directory of a working tree or a bare repository at ``path``."""
    if not path.is_dir():
        raise SourceError(f"{path}: no such directory")
    dot_git = path / ".git"
    candidate = dot_git if dot_git.exists() else path
    try:
        out = _git(["rev-parse", "--absolute-git-dir"], git_dir=candidate)
    except SourceError:
        raise SourceError(f"{path}: not a git repository") from None
    return Path(out.decode().strip())


def mirror_remote(url: str, cache_dir: Path) -> Path:
    """A bare mirror of ``url`` under ``cache_dir`` (cloned the first time, fetched after),
    named by the URL's hash so no URL can name a path."""
    if not is_remote(url):
        raise SourceError(f"{url}: not an https:// or ssh:// remote")
    cache_dir.mkdir(parents=True, exist_ok=True)
    target = cache_dir / (hashlib.sha256(url.encode()).hexdigest()[:32] + ".git")
    if (target / "HEAD").exists():
        _git(["fetch", "--prune", "--tags", "origin"], git_dir=target)
    else:
        _git(["clone", "--mirror", "--no-local", "--end-of-options", url, str(target)])
    return target


class GitRepository:
    """The plumbing calls one learn needs, on one git directory."""

    def __init__(self, git_dir: Path) -> None:
        self.git_dir = git_dir

    def resolve(self, rev: str) -> str:
        """The commit id ``rev`` (a commit, tag or branch) names."""
        if not rev or rev.startswith("-") or any(c in rev for c in "\0\n"):
            raise SourceError(f"{rev!r}: not a revision")
        try:
            out = _git(
                ["rev-parse", "--verify", "--quiet", "--end-of-options", f"{rev}^{{commit}}"],
                git_dir=self.git_dir,
            )
        except SourceError:
            raise SourceError(f"{rev}: no such commit, tag or branch") from None
        return out.decode().strip()

    def origin(self) -> str:
        """The URL of the ``origin`` remote, or ``""`` when there is none (read from the
        repository's config, which runs nothing)."""
        try:
            out = _git(["config", "--get", "remote.origin.url"], git_dir=self.git_dir)
        except SourceError:  # git config exits 1 when the key is not set
            return ""
        return out.decode("utf-8", "replace").strip()

    def files(self, commit: str) -> tuple[list[FileEntry], list[Refused]]:
        """Every blob of the commit's tree with its size (submodules and links left out),
        and the blobs the repository lacks (a partial or pruned copy: ``ls-tree -l`` says
        ``BAD`` for their size), which no learn can read and each is listed, not fatal."""
        out = _git(["ls-tree", "-r", "-z", "-l", "--full-tree", "--end-of-options", commit],
                   git_dir=self.git_dir)  # fmt: skip
        entries, missing = [], []
        for record in out.split(b"\0"):
            if not record:
                continue
            meta, _, path = record.partition(b"\t")
            mode, kind, blob, size = meta.split()
            if kind != b"blob" or mode == b"120000":  # submodules; a link's target is no source
                continue
            if not size.isdigit():
                missing.append(Refused(_path(path), "object missing from the repository"))
                continue
            entries.append(FileEntry(_path(path), int(size), blob.decode()))
        return entries, missing

    def changes(self, old: str, new: str) -> tuple[set[str], list[str], dict[str, str]]:
        """Between two commits: the paths added or changed in ``new``, the paths removed
        (a rename's old path included), and renames (new path -> old path)."""
        args = ["diff", "--name-status", "-z", "--no-ext-diff", "--no-textconv"]
        try:
            out = _git([*args, "-M", "--end-of-options", old, new, "--"], git_dir=self.git_dir)
        except SourceError:
            # Rename detection reads the blobs; a copy that lacks one (partial or pruned)
            # still has its trees: the changes without renames (the blobs it lacks are
            # listed as refused when read).
            out = _git([*args, "--no-renames", "--end-of-options", old, new, "--"],
                       git_dir=self.git_dir)  # fmt: skip
        fields = out.split(b"\0")
        changed: set[str] = set()
        removed: list[str] = []
        renamed: dict[str, str] = {}
        i = 0
        while i < len(fields) and fields[i]:
            status = fields[i].decode()
            if status[0] in "RC":
                source, target = _path(fields[i + 1]), _path(fields[i + 2])
                changed.add(target)
                if status[0] == "R":
                    removed.append(source)
                    renamed[target] = source
                i += 3
                continue
            path = _path(fields[i + 1])
            if status[0] == "D":
                removed.append(path)
            else:
                changed.add(path)
            i += 2
        return changed, removed, renamed

    def is_ancestor(self, old: str, new: str) -> bool:
        """Whether commit ``old`` is ``new`` or in its history."""
        if not (_HEX.match(old) and _HEX.match(new)):
            return False
        try:
            _git(["merge-base", "--is-ancestor", old, new], git_dir=self.git_dir)
        except SourceError:  # exit 1: not an ancestor
            return False
        return True

    def tags(self) -> list[tuple[str, str]]:
        """Every tag with the commit it names (annotated tags peeled), in git's order."""
        out = _git(
            ["for-each-ref", "--format=%(refname:strip=2)%00%(objectname)%00%(*objectname)",
             "refs/tags/"],
            git_dir=self.git_dir,
        )  # fmt: skip
        found = []
        for line in out.decode("utf-8", "surrogateescape").splitlines():
            name, _, rest = line.partition("\0")
            direct, _, peeled = rest.partition("\0")
            found.append((name, peeled or direct))
        return found

    def blame(
        self, path: str, ranges: list[tuple[int, int]], since: str, commit: str
    ) -> tuple[dict[int, str], dict[str, tuple[str, int]]]:
        """Who last changed each line of ``ranges`` (1-based, inclusive) of ``path`` at
        ``commit``, looking only at the commits after ``since``: line -> commit id (lines
        older than ``since`` are left out), and commit id -> (subject, committer time).
        One ``git blame --porcelain`` for all the ranges of the file."""
        if not (_HEX.match(since) and _HEX.match(commit)) or not ranges:
            return {}, {}
        args = ["blame", "--porcelain"]
        for start, end in ranges:
            args += ["-L", f"{start},{max(start, end)}"]
        args += [f"{since}..{commit}", "--", path]
        try:
            out = _git(args, git_dir=self.git_dir)
        except SourceError:  # a range past the file's end: nothing known of it
            return {}, {}
        lines: dict[int, str] = {}
        info: dict[str, dict[str, str]] = {}
        current = ""
        for raw in out.split(b"\n"):
            if raw.startswith(b"\t") or not raw:
                continue
            head = raw.split(b" ")
            if len(head) >= 3 and _HEX.match(head[0].decode("ascii", "replace")):
                current = head[0].decode()
                info.setdefault(current, {})
                lines[int(head[2])] = current
                continue
            key, _, value = raw.decode("utf-8", "replace").partition(" ")
            info.setdefault(current, {})[key] = value
        commits = {
            sha: (meta.get("summary", ""), int(meta.get("committer-time", "0") or 0))
            for sha, meta in info.items()
            if "boundary" not in meta
        }
        return {n: sha for n, sha in lines.items() if sha in commits}, commits

    def blobs(self, entries: list[FileEntry]) -> Iterator[tuple[FileEntry, bytes]]:
        """Each entry's bytes, from one ``git cat-file --batch`` (fed by a thread, so that
        neither pipe fills while the other waits)."""
        if not entries:
            return
        command = ["git", *_SAFE_CONFIG, f"--git-dir={self.git_dir}", "cat-file", "--batch"]
        process = subprocess.Popen(  # an argument list
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL, env=_env(),
        )  # fmt: skip
        stdin, stdout = process.stdin, process.stdout
        if stdin is None or stdout is None:  # pragma: no cover - both are pipes above
            raise SourceError("git cat-file: no pipes")

        def feed() -> None:
            try:
                for entry in entries:
                    if not _HEX.match(entry.ident):
                        raise ValueError(entry.ident)
                    stdin.write(entry.ident.encode() + b"\n")
                stdin.close()
            except (OSError, ValueError):
                process.kill()

        feeder = threading.Thread(target=feed, daemon=True)
        feeder.start()
        try:
            for entry in entries:
                header = stdout.readline().split()
                if len(header) != 3:
                    raise SourceError(f"git cat-file: no object for {entry.path}")
                size = int(header[2])
                data = stdout.read(size)
                stdout.read(1)  # the newline after each object
                yield entry, data
        finally:
            process.kill()
            process.wait()
            feeder.join()


def _path(raw: bytes) -> str:
    return raw.decode("utf-8", "surrogateescape")


def snapshot(repository: GitRepository, rev: str, since: str | None) -> Snapshot:
    """The files of ``rev`` to read: every file, or with ``since`` (a commit learned
    before, still in the repository) only the files changed since, with what was removed."""
    commit = repository.resolve(rev)
    files, missing = repository.files(commit)
    page = github_page(repository.origin())
    if since:
        try:
            old = repository.resolve(since)
        except SourceError:  # history rewritten, or another repository: read it all
            old = None
        if old is not None:
            changed, removed, renamed = repository.changes(old, commit)
            return Snapshot(
                revision=commit,
                files=[entry for entry in files if entry.path in changed],
                reader=repository.blobs,
                partial=True,
                removed=removed,
                renamed=renamed,
                web_url=page,
                refused=[m for m in missing if m.path in changed],
            )
    return Snapshot(
        revision=commit, files=files, reader=repository.blobs, web_url=page, refused=missing
    )
