"""Sources, their learn jobs, and the sites each source's records were learned from."""

from __future__ import annotations

import re
from pathlib import PurePosixPath
from typing import Any

from django.core.exceptions import ValidationError
from django.db import models

from kb.extract.versions import VersionError, version_key
from kb.records.models import BackgroundJob, ErrorRecord
from kb.sources.readers import SourceError
from kb.sources.readers.index import parse_spec

__all__ = ["LearnJob", "LearnedSite", "Source", "kind_of"]

_REPO = re.compile(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")
_REMOTE = re.compile(r"^(https://|ssh://|git@[A-Za-z0-9.-]+:)")
#: ``pypi:NAME`` (every release in a range, with ``releases`` or ``since``).
_PROJECT = re.compile(r"^pypi:[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?$")
_ARCHIVE = (".tar.gz", ".tgz", ".tar", ".zip", ".whl")


class Kind(models.TextChoices):
    GIT = "git", "Git repository (local path)"
    REMOTE = "remote", "Git remote (https or ssh)"
    RELEASE = "release", "Package-index release (pypi:NAME==VERSION)"
    ARCHIVE = "archive", "Source archive (.tar.gz, .zip, .whl)"


def kind_of(location: str) -> Kind:
    """What ``location`` names, from its form alone."""
    if location.startswith("pypi:"):
        return Kind.RELEASE
    if _REMOTE.match(location):
        return Kind.REMOTE
    if location.lower().endswith(_ARCHIVE):
        return Kind.ARCHIVE
    return Kind.GIT


def default_repo(location: str) -> str:
    """The ``owner/name`` a source's records show when none is given: a remote's path, a
    release's ``pypi/NAME``, a local directory's ``local/NAME``."""
    kind = kind_of(location)
    if kind == Kind.RELEASE:
        name = location.removeprefix("pypi:").partition("==")[0]
        return f"pypi/{name.lower()}"
    if kind == Kind.REMOTE:
        tail = re.split(r"[:/]", location.rstrip("/").removesuffix(".git"))
        if len(tail) >= 2:
            return f"{tail[-2]}/{tail[-1]}"
    stem = PurePosixPath(location.rstrip("/")).name
    for suffix in _ARCHIVE:
        stem = stem.removesuffix(suffix)
    stem = re.sub(r"[^A-Za-z0-9_.-]", "-", stem.removesuffix(".git")) or "source"
    return f"local/{stem}"


class Source(models.Model):
    """A codebase to learn error records from, and where learning it stands."""

    class State(models.TextChoices):
        NEW = "new", "Not learned yet"
        LEARNING = "learning", "Learning"
        LEARNED = "learned", "Learned"
        FAILED = "failed", "Last learn failed"

    location = models.CharField(
        max_length=1000,
        unique=True,
        help_text="A git repository's path, an https:// or ssh:// remote, pypi:NAME==VERSION, "
        "or a .tar.gz / .zip / .whl archive's path.",
    )
    kind = models.CharField(max_length=20, choices=Kind, editable=False, blank=True)
    repo = models.CharField(
        max_length=200,
        blank=True,
        help_text="owner/name, as records and links show the repository "
        "(such as sqlalchemy/sqlalchemy); empty: local/NAME or pypi/NAME from the location.",
    )
    web_url = models.URLField(
        blank=True,
        help_text="The repository's web page (https://github.com/owner/name) for links to "
        "each site; empty: a git repository's GitHub origin remote, else no link.",
    )
    revision = models.CharField(
        max_length=200,
        blank=True,
        default="HEAD",
        help_text="The commit, tag or branch to read (git); ignored for releases and archives.",
    )
    releases = models.CharField(
        max_length=200,
        blank=True,
        help_text="Learn every release: a tag pattern with one * (rel_*, v*) for a git "
        "repository, a version range (>=1.11,<2.1) for pypi:NAME; empty: one revision.",
    )
    release_separator = models.CharField(
        max_length=1,
        blank=True,
        help_text="What separates a tag's version numbers (_ for rel_1_3_0); empty: read "
        "from the tags.",
    )
    since = models.CharField(
        max_length=100, blank=True, help_text="The oldest release to learn (a version)."
    )
    publish = models.BooleanField(
        default=True,
        help_text="Publish new records at once; unticked, they are created as drafts to review.",
    )
    include_tests = models.BooleanField(
        default=False, help_text="Read test code too (left out by default)."
    )
    state = models.CharField(max_length=20, choices=State, default=State.NEW)
    last_revision = models.CharField(
        max_length=200, blank=True, help_text="The revision learned last (the next learn "
        "reads only what changed since)."
    )  # fmt: skip
    last_learned_at = models.DateTimeField(null=True, blank=True)
    last_error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["repo", "location"]

    def __str__(self) -> str:
        return f"{self.repo} ({self.location})"

    def save(self, *args: Any, **kwargs: Any) -> None:
        self.kind = kind_of(self.location)
        if not self.repo:
            self.repo = default_repo(self.location)
        super().save(*args, **kwargs)

    def clean(self) -> None:
        self.location = self.location.strip()
        if not self.location:
            raise ValidationError({"location": "Say where the source is."})
        self.kind = kind_of(self.location)
        self.releases, self.since = self.releases.strip(), self.since.strip()
        walks = bool(self.releases or self.since)
        if self.kind == Kind.RELEASE and not (walks and _PROJECT.match(self.location)):
            try:
                parse_spec(self.location)
            except SourceError as error:
                raise ValidationError({"location": str(error)}) from None
        if self.kind == Kind.ARCHIVE and walks:
            raise ValidationError({"releases": "An archive is one release: it has none to walk."})
        if self.kind in {Kind.GIT, Kind.REMOTE} and self.releases and "*" not in self.releases:
            raise ValidationError({"releases": "A tag pattern with one * (such as rel_* or v*)."})
        if self.since:
            try:
                version_key(self.since)
            except VersionError:
                raise ValidationError({"since": "A version, such as 1.3.0."}) from None
        if not self.repo:
            self.repo = default_repo(self.location)
        if not _REPO.match(self.repo):
            raise ValidationError({"repo": "owner/name, letters, digits, '.', '_' and '-'."})
        if self.revision.startswith("-"):
            raise ValidationError({"revision": "A revision never starts with '-'."})


class LearnJob(BackgroundJob, models.Model):
    """One learn of a source: its progress while the task runs, then what it did. The task
    (``kb.sources.tasks.run_learn``) may run in another process, so everything it needs and
    everything it reports lives here."""

    class State(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        DONE = "done", "Done"
        FAILED = "failed", "Failed"

    source = models.ForeignKey(Source, on_delete=models.CASCADE, related_name="jobs")
    requested_revision = models.CharField(max_length=200, blank=True)
    revision = models.CharField(max_length=200, blank=True, help_text="The revision read.")
    since = models.CharField(
        max_length=200, blank=True, help_text="Only files changed since this revision were read."
    )
    state = models.CharField(max_length=20, choices=State, default=State.QUEUED)
    files_total = models.PositiveIntegerField(default=0)
    files_read = models.PositiveIntegerField(default=0)
    files_skipped = models.PositiveIntegerField(default=0)
    sites = models.PositiveIntegerField(default=0)
    created = models.PositiveIntegerField(default=0)
    updated = models.PositiveIntegerField(default=0)
    unchanged = models.PositiveIntegerField(default=0)
    gone = models.PositiveIntegerField(default=0)
    errors = models.PositiveIntegerField(default=0)
    report = models.JSONField(default=dict, blank=True)
    error = models.TextField(blank=True)
    task_id = models.CharField(max_length=64, blank=True)
    created_by = models.ForeignKey(
        "auth.User", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"learn of {self.source.repo} ({self.get_state_display()})"

    def progress(self) -> tuple[int, int]:
        return self.files_read, self.files_total


class LearnedSite(models.Model):
    """One error site of a source and the record it is: found at ``revision``, or, with
    ``gone_since``, not in the code since that revision (kept and still matched: people
    run old versions)."""

    source = models.ForeignKey(Source, on_delete=models.CASCADE, related_name="sites")
    key = models.CharField(max_length=64, help_text="kb.extract.identity.site_key")
    record = models.ForeignKey(ErrorRecord, on_delete=models.CASCADE, related_name="+")
    path = models.CharField(max_length=500)
    line = models.PositiveIntegerField(default=0)
    revision = models.CharField(max_length=200, help_text="The revision it was last read at.")
    gone_since = models.CharField(max_length=200, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["source", "key"], name="sources_site_unique")
        ]
        indexes = [models.Index(fields=["source", "path"], name="sources_site_path")]

    def __str__(self) -> str:
        return f"{self.path}:{self.line}"
