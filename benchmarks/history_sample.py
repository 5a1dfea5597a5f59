"""A sample of the release walk's pairing decisions, for labelling by hand, and its count.

``draw``: walks a mirror's releases (no database written: `kb.sources.history`'s reader
and `kb.extract.history.History` with its journal on) and writes a sample of two kinds of
decision to label:

- ``paired``: two sites the walk took as one that were not the same template in the
  same function (reworded in place, function renamed, moved to another file): a wrong
  one is two sites **merged**;
- ``apart``: a site removed in a release beside the most alike site new in that same
  release, which the walk kept apart: a wrong one is one site **split**.

Each line gets ``"same_site": null`` for a person to set to true or false (with a
``"note"``) after reading both sites in the repository. ``count`` reads a labelled file
and prints the mistakes of each kind (merged: paired but not the same site; split: kept
apart but the same site).

Run: ``.venv/bin/python benchmarks/history_sample.py draw sqlalchemy/sqlalchemy rel_* 1.3.0
--rev COMMIT --out FILE [--n 40]`` then ``... count FILE``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
from difflib import SequenceMatcher
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

MIRRORS_DIR = Path(os.environ.get("KB_MIRRORS_DIR") or REPO.parent.parent / ".mirror")
#: The least alike two templates must be for a removed and a new site to be worth a look.
APART_FLOOR = 0.4


def walk(repo: str, pattern: str, since: str, rev: str) -> list[dict[str, Any]]:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "kb.settings")
    import django

    django.setup()
    from kb.extract.history import History
    from kb.sources.history import _git_points, _Reader, git_releases
    from kb.sources.learning import LearnResult
    from kb.sources.models import Source
    from kb.sources.readers import git

    location = MIRRORS_DIR / repo.replace("/", "+") / "repo"
    source = Source(location=str(location), repo=repo, releases=pattern, since=since,
                    revision=rev or "HEAD")  # fmt: skip
    source.kind = "git"
    repository = git.GitRepository(git.git_dir_of(location))
    releases = git_releases(repository, pattern, since)
    history = History()
    history.journal = []
    reader = _Reader(source, LearnResult(source=str(location), revision=""), None)
    for point, _previous in _git_points(source, repository, None, releases, reader):
        history.step(point.version, point.files, point.removed, point.renamed)
    return history.journal


def ratio(a: str, b: str) -> float:
    return round(SequenceMatcher(None, a, b).ratio(), 3)


def draw(journal: list[dict[str, Any]], n: int, seed: int = 26) -> list[dict[str, Any]]:
    """``n`` decisions of each kind, at random (seeded); the first line also says what
    they were drawn from (``drawn``)."""
    rng = random.Random(seed)
    paired = [e for e in journal if e["kind"] not in {"removed", "new"}]
    by_release: dict[str, dict[str, list[dict[str, Any]]]] = {}
    for e in journal:
        if e["kind"] in {"removed", "new"}:
            by_release.setdefault(str(e["release"]), {"removed": [], "new": []})[e["kind"]].append(
                e
            )
    apart = []
    for release, sides in by_release.items():
        for gone in sides["removed"]:
            best, score = None, 0.0
            for new in sides["new"]:
                s = ratio(gone["old"]["template"], new["new"]["template"])
                if s > score:
                    best, score = new, s
            if best is not None and score >= APART_FLOOR:
                apart.append({"kind": "apart", "release": release, "old": gone["old"],
                              "new": best["new"]})  # fmt: skip
    sample = []
    for decision, pool in (("paired", paired), ("apart", apart)):
        for e in rng.sample(pool, min(n, len(pool))):
            sample.append({
                "decision": decision, "step": e["kind"], "release": e["release"],
                "similarity": ratio(e["old"]["template"], e["new"]["template"]),
                "old": e["old"], "new": e["new"], "same_site": None, "note": "",
            })  # fmt: skip
    print(f"pairings other than same: {len(paired)}; removed beside an alike new: {len(apart)}")
    if sample:
        sample[0]["drawn"] = {"pairings_total": len(paired), "apart_total": len(apart)}
    return sample


def count(path: Path) -> dict[str, Any]:
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    labelled = [r for r in rows if r["same_site"] is not None]
    paired = [r for r in labelled if r["decision"] == "paired"]
    apart = [r for r in labelled if r["decision"] == "apart"]
    return {
        "labelled": len(labelled),
        "paired": len(paired),
        "merged_mistakes": sum(1 for r in paired if not r["same_site"]),
        "apart": len(apart),
        "split_mistakes": sum(1 for r in apart if r["same_site"]),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="command", required=True)
    d = sub.add_parser("draw")
    d.add_argument("repo")
    d.add_argument("pattern")
    d.add_argument("since")
    d.add_argument("--rev", default="")
    d.add_argument("--n", type=int, default=40)
    d.add_argument("--out", type=Path, required=True)
    c = sub.add_parser("count")
    c.add_argument("file", type=Path)
    args = parser.parse_args()
    if args.command == "draw":
        sample = draw(walk(args.repo, args.pattern, args.since, args.rev), args.n)
        if sample:
            sample[0]["drawn"].update(repo=args.repo, since=args.since, rev=args.rev)
        args.out.write_text("".join(json.dumps(row) + "\n" for row in sample))
        print(f"{len(sample)} decisions to label in {args.out}")
    else:
        print(json.dumps(count(args.file)))


if __name__ == "__main__":
    main()
