"""The learning-loop benchmark's data: the real dataset plus synthetic records up to
`RECORDS`, and `ROWS` gaps, votes, proposals and usage rows over them (with the record
tallies those votes make). Built once per
database and reused (each builder fills only what is missing). Imported by
``bench_loop.py`` after it has set Django up."""

from __future__ import annotations

import hashlib
import os
import random
from datetime import timedelta
from pathlib import Path
from typing import Any

from django.core.management import call_command
from django.utils import timezone

REPO = Path(__file__).resolve().parent.parent
DATA = Path(os.environ.get("KB_DATASET_DIR") or REPO.parent / "shared" / "data")
RECORDS = 200_000
ROWS = 100_000  # gaps, votes, proposals and usage rows each
SYNTHETIC = "syn"


def ensure_records() -> dict[str, Any]:
    """The real dataset through the importer, then synthetic records up to `RECORDS`."""
    from kb.records.importer import import_jsonl
    from kb.records.models import ErrorRecord

    call_command("migrate", verbosity=0, interactive=False)
    call_command("createcachetable", verbosity=0)
    real = ErrorRecord.objects.exclude(pk__startswith=SYNTHETIC).count()
    if real == 0:
        with (DATA / "records-all.jsonl").open("rb") as fh:
            import_jsonl(fh, source="records-all.jsonl")
    have = ErrorRecord.objects.count()
    batch: list[ErrorRecord] = []
    for n in range(have, RECORDS):
        batch.append(
            ErrorRecord(
                id=f"{SYNTHETIC}{n:013d}",
                repo=f"synthetic/repo-{n % 500}",
                slug=f"synthetic-{n}",
                file_path=f"src/module_{n % 2000}.py",
                line_number=n % 900 + 1,
                source_code_start=1,
                source_code_end=2,
                error_message=f"Synthetic failure {n} in stage {{}}",
                message_pattern=f"Synthetic failure {n} in stage (.+?)",
                error_type="error_code",
                severity="error",
                solutions=[] if n % 2 else ["Restart the stage"],
                disabled_reason="synthetic record (benchmark): never compiled",
            )
        )
        if len(batch) == 5000:
            ErrorRecord.objects.bulk_create(batch)
            batch = []
    if batch:
        ErrorRecord.objects.bulk_create(batch)
    real = ErrorRecord.objects.exclude(pk__startswith=SYNTHETIC).count()
    return {"records": ErrorRecord.objects.count(), "real_records": real}


def ensure_loop_rows(rng: random.Random) -> dict[str, int]:
    """`ROWS` gaps, votes, proposals and usage rows over the records (when missing)."""
    from kb.loop.models import Gap, Proposal, RecordTally, UsageDay, Vote
    from kb.loop.votes import recount
    from kb.records.models import ErrorRecord

    ids = list(ErrorRecord.objects.values_list("pk", flat=True))
    now = timezone.now()
    today = timezone.localdate()
    if Gap.objects.count() < ROWS:
        Gap.objects.all().delete()
        gaps = []
        for n in range(ROWS):
            seen = now - timedelta(minutes=rng.randrange(60 * 24 * 90))
            closed = n % 10 == 0
            gaps.append(
                Gap(
                    key=hashlib.sha256(f"gap {n}".encode()).hexdigest(),
                    template=f"Synthetic unknown failure {n} while <*> the <*>",
                    count=rng.randrange(1, 500),
                    first_seen=seen,
                    last_seen=seen,
                    samples=[f"Synthetic unknown failure {n} while loading the shard"],
                    nearest=[{"record_id": rng.choice(ids), "similarity": 0.5}],
                    closed_by_id=rng.choice(ids) if closed else None,
                    closed_at=seen if closed else None,
                )
            )
        Gap.objects.bulk_create(gaps, batch_size=5000)
    if Vote.objects.count() < ROWS:
        Vote.objects.all().delete()
        verdicts = ["fixed", "not_fixed", "wrong_match"]
        Vote.objects.bulk_create(
            (
                Vote(
                    record_id=rng.choice(ids),
                    verdict=rng.choice(verdicts),
                    day=today - timedelta(days=n % 60),
                    voter=f"{n:064x}",
                    source=f"{n:064x}",  # each its own address: none capped
                    step=1 if n % 5 == 0 else None,  # some on a step, outside the tally
                )
                for n in range(ROWS)
            ),
            batch_size=5000,
        )
        RecordTally.objects.all().delete()
    if not RecordTally.objects.exists():
        recount()  # what cast_vote would have kept, had the votes come one by one
    if Proposal.objects.count() < ROWS:
        Proposal.objects.all().delete()
        states = ["pending"] * 6 + ["accepted", "rejected"]
        Proposal.objects.bulk_create(
            (
                Proposal(
                    record_id=rng.choice(ids),
                    field="solutions",
                    text=f"Synthetic proposal {n}",
                    status=rng.choice(states),
                )
                for n in range(ROWS)
            ),
            batch_size=5000,
        )
    if UsageDay.objects.count() < ROWS:
        UsageDay.objects.all().delete()
        pairs = {(rng.choice(ids), today - timedelta(days=rng.randrange(90))) for _ in range(ROWS)}
        UsageDay.objects.bulk_create(
            (UsageDay(record_id=r, day=d, hits=rng.randrange(1, 50)) for r, d in pairs),
            batch_size=5000,
        )
    return {
        "gaps": Gap.objects.count(),
        "votes": Vote.objects.count(),
        "record_tallies": RecordTally.objects.count(),
        "proposals": Proposal.objects.count(),
        "usage_rows": UsageDay.objects.count(),
    }
