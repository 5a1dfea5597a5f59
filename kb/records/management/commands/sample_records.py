"""``manage.py sample_records``: build the small demo/test sample kept in ``fixtures/``.

Takes every enriched record (the newer version), the seed (the first line of the full
file), the records the labelled eval cases expect, and a deterministic sample of the rest
spread across repositories, so the demo answers real pastes and shows every page type.
"""

from __future__ import annotations

import json
import random
from collections import defaultdict
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandParser


class Command(BaseCommand):
    help = "Write a deterministic sample of a records JSONL file (for fixtures/)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("source")
        parser.add_argument("--enriched", help="JSONL of newer versions to take whole")
        parser.add_argument("--eval", help="eval JSONL whose expected records are kept")
        parser.add_argument("--per-repo", type=int, default=60)
        parser.add_argument("--seed", type=int, default=20261130)
        parser.add_argument("--output", required=True)

    def handle(self, *args: Any, **options: Any) -> None:
        lines = Path(options["source"]).read_text(encoding="utf-8").splitlines()
        by_id = {json.loads(line)["record"]["id"]: line for line in lines}
        keep: dict[str, str] = {}
        first = json.loads(lines[0])["record"]["id"]
        keep[first] = by_id[first]
        if options["eval"]:
            for raw in Path(options["eval"]).read_text(encoding="utf-8").splitlines():
                case = json.loads(raw)
                for rid in [*case.get("expected", []), *case.get("also_acceptable", [])]:
                    if rid in by_id:
                        keep[rid] = by_id[rid]
        per_repo: dict[str, list[str]] = defaultdict(list)
        for rid, line in by_id.items():
            per_repo[json.loads(line)["record"]["repo"]].append(rid)
        rng = random.Random(options["seed"])
        for repo in sorted(per_repo):
            ids = sorted(per_repo[repo])
            for rid in rng.sample(ids, min(options["per_repo"], len(ids))):
                keep[rid] = by_id[rid]
        if options["enriched"]:
            for raw in Path(options["enriched"]).read_text(encoding="utf-8").splitlines():
                keep[json.loads(raw)["record"]["id"]] = raw
        out = Path(options["output"])
        out.write_text("".join(line + "\n" for line in keep.values()), encoding="utf-8")
        self.stdout.write(f"Wrote {len(keep)} records to {out}")
