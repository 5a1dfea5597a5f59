"""The stored knowledge: error records, their tags, and the revision counter.

An ``ErrorRecord`` is one place in a repository's source code that produces an error
message, kept field for field as the dataset has it (``kb.records.schema`` maps dataset keys to
model fields), plus what curation adds: a publication status, a pattern status (a record
whose pattern the matcher refuses is stored, but disabled with its reason), which fields a
curator owns, and conflicts with the newest import.

``revision`` increases with every write that can change matching, so each worker process
can tell cheaply whether its compiled matcher is stale and fetch only what changed.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Self

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.files.storage import FileSystemStorage
from django.db import connection, models, transaction
from django.db.models import F, Q
from django.utils import timezone
from simple_history.models import HistoricalRecords

from kb.records.access import is_curator
from kb.records.links import record_url, tag_url
from kb.records.schema import record_to_dataset
from kb.records.validation import (
    COLLISION_BUDGET_S,
    COLLISION_LIMIT,
    Collision,
    find_collisions,
    prefilter_word,
    validate_record,
)


class Severity(models.TextChoices):
    FATAL = "fatal", "Fatal"
    ERROR = "error", "Error"
    WARNING = "warning", "Warning"


class Status(models.TextChoices):
    DRAFT = "draft", "Draft"
    PUBLISHED = "published", "Published"
    RETIRED = "retired", "Retired"


class Revision(models.Model):
    """A single-row counter; ``next_revision()`` hands out increasing numbers."""

    value = models.BigIntegerField(default=0)

    class Meta:
        db_table = "kb_revision"

    def __str__(self) -> str:
        return f"revision {self.value}"


def next_revision() -> int:
    """Take the next revision number (atomically, on SQLite and PostgreSQL alike)."""
    with transaction.atomic():
        updated = Revision.objects.filter(pk=1).update(value=F("value") + 1)
        if not updated:
            Revision.objects.create(pk=1, value=1)
            return 1
        return Revision.objects.values_list("value", flat=True).get(pk=1)


def current_revision() -> int:
    """The latest revision number (0 before the first write).

    Read on every page view that keys a cache on it, so it is one plain statement: the ORM
    would spend more building the query than the query costs.
    """
    with connection.cursor() as cursor:
        cursor.execute("SELECT value FROM kb_revision WHERE id = 1")
        row = cursor.fetchone()
    return row[0] if row else 0


class Tag(models.Model):
    """A browsable tag; ``RecordTag`` rows index the ordered tag list of each record."""

    name = models.CharField(max_length=100, unique=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    def get_absolute_url(self) -> str:
        return tag_url(self.name)


class ErrorRecordQuerySet(models.QuerySet["ErrorRecord"]):
    def published(self) -> Self:
        """What every list shows (records, tags, search, neighbours): published records.

        Lists are rendered once per data revision and served to everyone, so they hold
        nothing that depends on who reads them.
        """
        return self.filter(status=Status.PUBLISHED)

    def visible_to(self, user: Any) -> Self:
        """The records ``user`` may open by id (the record page and its JSON twin, and
        the votes and proposals made on a record).

        Published and retired records are public: old links and logs still point at a
        retired record, and its page says it is retired. Drafts are for curators only
        (`kb.records.access.is_curator`, not any staff account); for anyone else a draft is
        a plain 404, so its existence does not leak. ``user`` may be ``None`` (no
        session): the public.
        """
        if is_curator(user):
            return self.all()
        return self.exclude(status=Status.DRAFT)

    def active(self) -> Self:
        """What the matcher compiles: published records whose pattern was admitted."""
        return self.filter(status=Status.PUBLISHED, disabled_reason="")

    def with_tag(self, tag: str) -> Self:
        """Records carrying ``tag`` (by name; an unknown tag gives none).

        ``IN (subquery)``: SQLite builds the tag's id set once and checks it while walking
        whichever index orders the list, instead of joining and probing per record.
        """
        tagged = RecordTag.objects.filter(tag__name=tag.strip()).values("record_id")
        return self.filter(pk__in=tagged)

    def search(self, query: str) -> Self:
        """Plain substring search over message, class, code and documentation.

        ``kb.browse.search`` adds the ranked full-text search (FTS5 / PostgreSQL); this is the
        portable fallback it builds on.
        """
        query = query.strip()
        if not query:
            return self
        cond = Q()
        for field in ("error_message", "error_class", "error_code", "documentation", "slug"):
            cond |= Q(**{f"{field}__icontains": query})
        return self.filter(cond | Q(pk=query))


# The facet columns the covering list indexes carry (``ErrorRecord.Meta.indexes``).
FACET_COLUMNS = ["severity", "error_type", "error_class", "handling_strategy"]

# Fields whose ``db_index`` the history table does not copy (see ``ErrorRecord.history``).
HISTORY_UNINDEXED = [
    "slug",
    "error_code",
    "error_type",
    "error_class",
    "handling_strategy",
    "background_tag",
]


class ErrorRecordManager(models.Manager["ErrorRecord"]):
    def colliding_with(
        self,
        pattern: str,
        *,
        exclude_id: str | None = None,
        limit: int = COLLISION_LIMIT,
        budget_s: float = COLLISION_BUDGET_S,
    ) -> tuple[list[Collision], bool]:
        """Other records, retired ones aside, whose sample messages ``pattern`` matches:
        (collisions, complete), as ``kb.records.validation.find_collisions`` reports them.

        Only messages containing the pattern's longest required word are read, so a
        specific pattern inspects a handful of rows rather than the table.
        """
        rows = self.exclude(status=Status.RETIRED)
        if exclude_id:
            rows = rows.exclude(pk=exclude_id)
        word = prefilter_word(pattern)
        if word:
            rows = rows.filter(error_message__icontains=word)
        candidates = rows.values_list("id", "slug", "error_message").iterator(2000)
        return find_collisions(pattern, candidates, limit=limit, budget_s=budget_s)


class ErrorRecord(models.Model):
    # --- identity and provenance (from the dataset, read-only in the admin) -------------
    id = models.CharField(primary_key=True, max_length=64)
    # Equality lookups on repo use the leading column of kb_record_order / kb_record_file.
    # A record learned from code has a source location; one reported from the field (a
    # curator's record made from a gap) has none: repository and file empty, lines null.
    repo = models.CharField(
        max_length=200,
        blank=True,
        help_text="Optional: empty for a record reported from the field (no source location).",
    )
    slug = models.CharField(max_length=200, db_index=True)
    file_path = models.CharField(
        max_length=500, blank=True, help_text="Optional, like the repository."
    )
    line_number = models.PositiveIntegerField(
        null=True, blank=True, help_text="Optional, like the repository."
    )
    source_code = models.TextField(blank=True)
    source_code_start = models.PositiveIntegerField(null=True, blank=True)
    source_code_end = models.PositiveIntegerField(null=True, blank=True)
    github_url = models.CharField(max_length=1000, blank=True)
    analyzed_sha = models.CharField(max_length=100, blank=True)
    analyzed_at = models.DateTimeField(null=True, blank=True)
    content_changed_at = models.DateTimeField(null=True, blank=True)
    schema_version = models.PositiveIntegerField(default=2)
    dataset_version = models.CharField(max_length=40, blank=True)
    # Keys a future dataset version adds are kept here and exported back unchanged.
    extra = models.JSONField(default=dict, blank=True)

    # --- the error ----------------------------------------------------------------------
    error_message = models.TextField()
    message_pattern = models.TextField()

    # --- classification: what kind of error it is (filters and facets read these) ------
    error_type = models.CharField(max_length=40, db_index=True)
    error_class = models.CharField(max_length=200, null=True, blank=True, db_index=True)
    error_code = models.CharField(max_length=200, null=True, blank=True, db_index=True)
    http_status = models.PositiveSmallIntegerField(null=True, blank=True)
    # No index of its own: three values, each shared by a large part of the records, so
    # any list is cheaper along an ordered index (migration 0012); facets read
    # kb_record_listing.
    severity = models.CharField(max_length=20, choices=Severity)
    handling_strategy = models.CharField(max_length=60, null=True, blank=True, db_index=True)
    background_tag = models.CharField(max_length=100, null=True, blank=True, db_index=True)
    tags = models.JSONField(default=list, blank=True)

    # --- analysis: what the record page tells the reader (often empty) ----------------
    documentation = models.TextField(null=True, blank=True)
    trigger_scenarios = models.TextField(null=True, blank=True)
    common_situations = models.TextField(null=True, blank=True)
    solutions = models.JSONField(default=list, blank=True)
    prevention_tips = models.JSONField(default=list, blank=True)
    example_fix = models.TextField(null=True, blank=True)
    validation_code = models.TextField(null=True, blank=True)
    type_guard = models.TextField(null=True, blank=True)
    try_catch_pattern = models.TextField(null=True, blank=True)

    # --- release history: learned from a source's releases, never edited by hand -------
    # Equality lookups on repo with the release names use kb_record_release.
    first_release = models.CharField(
        max_length=100, null=True, blank=True, help_text="The first release whose code has it."
    )
    last_release = models.CharField(
        max_length=100, null=True, blank=True, help_text="The last release whose code has it."
    )
    removed_in = models.CharField(
        max_length=100,
        null=True,
        blank=True,
        help_text="The first release without it (empty: still in the code).",
    )
    release_history = models.JSONField(
        null=True,
        blank=True,
        help_text="Its wordings, locations and commits across releases "
        "(the dataset key ``releaseHistory``: kb.records.schema).",
    )
    retired_wordings = models.JSONField(
        default=list,
        blank=True,
        help_text="Patterns of older wordings a curator retired: no longer matched.",
    )

    # --- curation and matching state ---------------------------------------------------
    # Equality lookups on status use the leading column of kb_record_active (and, for
    # lists, of kb_record_listing).
    status = models.CharField(max_length=20, choices=Status, default=Status.PUBLISHED)
    disabled_reason = models.TextField(
        blank=True, help_text="Why the matcher refuses this record's pattern (empty: matched)."
    )
    pattern_engine = models.CharField(max_length=20, blank=True)
    curated_fields = models.JSONField(
        default=list, blank=True, help_text="Dataset keys a curator edited; imports keep them."
    )
    conflicts = models.JSONField(
        default=dict,
        blank=True,
        help_text="Per dataset key: the value a newer import brought for a curated field.",
    )
    revision = models.BigIntegerField(default=0, db_index=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    # History rows are read per record (``id``, kept indexed) in ``history_date`` order
    # (indexed by simple_history itself); the model's filter indexes are not copied: no
    # history query filters on them, and each cost every import a B-tree insert per row.
    # ``source_code`` is not versioned: it is provenance (never curated, kept as it is on a
    # revert), fixed by the versioned ``github_url``/``analyzed_sha``/``file_path`` and
    # line range, and it is most of a record's bytes: copied into every history row it
    # would double what an import writes. ``release_history`` likewise: it comes from the code's
    # releases, and its release names (versioned) say when it changed.
    history = HistoricalRecords(
        excluded_fields=["revision", "updated_at", "source_code", "release_history"],
        no_db_index=HISTORY_UNINDEXED,
    )
    objects = ErrorRecordManager.from_queryset(ErrorRecordQuerySet)()

    # Not stored: the admin form or API code sets ``accept_collisions`` before
    # ``full_clean()`` to save a pattern that also matches other records; ``clean()``
    # leaves the collisions it found (new ones only) in ``collisions`` for the warnings.
    accept_collisions: bool = False
    collisions: tuple[Collision, ...] = ()
    # Declared only (no value: simple-history looks them up with a default): who and why
    # for the history row it writes on the next save, set by ``kb.records.services``.
    _change_reason: str
    _history_user: Any

    class Meta:
        ordering = ["repo", "slug", "id"]
        indexes = [
            models.Index(fields=["status", "disabled_reason"], name="kb_record_active"),
            # The default order, for lists of every status (the admin's): its first page
            # is read off this index instead of sorting a whole repository's rows.
            models.Index(fields=["repo", "slug", "id"], name="kb_record_order"),
            # "Raised in the same file" on the record page.
            models.Index(fields=["repo", "file_path", "line_number"], name="kb_record_file"),
            # "Errors that exist in release R": a repository's release names, then its
            # records whose range covers them.
            models.Index(
                fields=["repo", "first_release", "last_release"], name="kb_record_release"
            ),
            # "Same error class" on the record page: a class's first rows in slug order,
            # instead of every row of the repository or of the class, then a sort.
            models.Index(fields=["repo", "error_class", "slug"], name="kb_record_class"),
            # Covering indexes: a row's source and analysis text spill onto overflow pages
            # on SQLite, so lists, counts, tag pages and facets read these instead of rows.
            # The published list in display order, with the facet columns: a facet filter
            # is checked in the index while walking it (no sort, no row reads).
            models.Index(
                fields=["status", "repo", "slug", "id", *FACET_COLUMNS], name="kb_record_listing"
            ),
            # Every column a filter, facet or list order needs, by id: for the joins from
            # kb_recordtag and the search index, and for facet scans.
            models.Index(
                fields=["id", "status", "repo", "slug", *FACET_COLUMNS], name="kb_record_browse"
            ),
            # The few records with a release history, whose older wordings a matcher build
            # reads: found in this index, not by reading every row.
            models.Index(
                fields=["id"],
                condition=Q(release_history__isnull=False),
                name="kb_record_history",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.slug} ({self.id})"

    def get_absolute_url(self) -> str:
        return record_url(self.id)

    @property
    def is_active(self) -> bool:
        return self.status == Status.PUBLISHED and not self.disabled_reason

    @property
    def has_analysis(self) -> bool:
        return bool(self.documentation or self.solutions or self.trigger_scenarios)

    def clean(self) -> None:
        """Validation shared by the admin and the API (``kb.records.validation``), with the
        stored row and the collision lookup it needs from the database."""
        stored = None
        if not self._state.adding:
            stored = (
                type(self)
                .objects.filter(pk=self.pk)
                .values_list("message_pattern", "error_message")
                .first()
            )
        found = validate_record(
            self,
            stored=stored,
            colliding_with=lambda p: type(self).objects.colliding_with(p, exclude_id=self.pk)[0],
        )
        self.collisions = tuple(found.collisions)
        if found.errors:
            raise ValidationError(found.errors)

    def tag_names(self) -> list[str]:
        return [str(t) for t in self.tags]

    def as_dict(self) -> dict[str, Any]:
        return record_to_dataset(self)


class RecordTag(models.Model):
    """Index row: record ``record`` carries tag ``tag`` at ``position`` of its tag list.

    The record's ``tags`` JSON list is the source of truth (ordered, exported, versioned
    by history); these rows are rebuilt from it by ``kb.records.services.sync_tags`` on every
    write so browsing by tag is an indexed join.
    """

    # No index of its own: the unique (record, tag) constraint's index leads with record.
    record = models.ForeignKey(ErrorRecord, on_delete=models.CASCADE, db_index=False)
    tag = models.ForeignKey(Tag, on_delete=models.CASCADE)
    position = models.PositiveSmallIntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["record", "tag"], name="kb_recordtag_unique")
        ]
        ordering = ["record", "position"]

    def __str__(self) -> str:
        return f"{self.record_id} #{self.tag_id}"


def _import_storage() -> FileSystemStorage:
    """Where uploaded JSONL files wait for their import task (a directory every worker
    can read: the ``KB_IMPORT_DIR`` setting)."""
    return FileSystemStorage(location=settings.KB_IMPORT_DIR)


class BackgroundJob:
    """What the pages of a job run by the task worker (an import, a learn) show of it: its
    share done, whether it finished, and whether it stalled. The model defines ``state``
    (with ``State.RUNNING``, ``DONE``, ``FAILED``), ``started_at``, ``heartbeat_at`` and
    `progress`."""

    state: Any
    State: Any
    started_at: datetime | None
    heartbeat_at: datetime | None

    def progress(self) -> tuple[int, int]:
        """(done, total) in the job's own unit (bytes, files)."""
        raise NotImplementedError

    @property
    def percent(self) -> int:
        if self.state == self.State.DONE:
            return 100
        done, total = self.progress()
        if not total:
            return 0
        return min(99, int(done * 100 / total))

    @property
    def finished(self) -> bool:
        return self.state in {self.State.DONE, self.State.FAILED}

    @property
    def last_sign_of_life(self) -> datetime | None:
        return self.heartbeat_at or self.started_at

    @property
    def stalled(self) -> bool:
        """Running, but silent for ``KB_IMPORT_STALL_SECONDS``: the process running it has
        most likely stopped (a restart, a crash). What it committed is kept."""
        last = self.last_sign_of_life
        if self.state != self.State.RUNNING or last is None:
            return False
        return (timezone.now() - last).total_seconds() > settings.KB_IMPORT_STALL_SECONDS


class ImportJob(BackgroundJob, models.Model):
    """One admin upload of a JSONL file: its progress while the import task runs, then
    the importer's report. The task (``kb.curation.tasks.run_import``) may run in another process,
    so everything it needs and everything it reports lives here."""

    class State(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        DONE = "done", "Done"
        FAILED = "failed", "Failed"

    source = models.CharField(max_length=255, help_text="The uploaded file's name.")
    file = models.FileField(storage=_import_storage, upload_to="%Y/%m/", blank=True)
    size = models.BigIntegerField(default=0)
    dry_run = models.BooleanField(default=False)
    atomic = models.BooleanField(default=False, help_text="All or nothing.")
    state = models.CharField(max_length=20, choices=State, default=State.QUEUED)
    lines_done = models.BigIntegerField(default=0)
    bytes_done = models.BigIntegerField(default=0)
    report = models.JSONField(default=dict, blank=True)
    error = models.TextField(blank=True)
    task_id = models.CharField(max_length=64, blank=True)
    created_by = models.ForeignKey(
        "auth.User", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(
        null=True, blank=True, help_text="The last sign of life from the task running it."
    )

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"import of {self.source} ({self.get_state_display()})"

    def progress(self) -> tuple[int, int]:
        return self.bytes_done, self.size
