"""Learning a small real git repository built in the test: records through the importer's
path, re-learning reads only what changed, moved sites keep their record, sites gone are
marked and kept, curators' work is never overwritten, and the command's --json shape.

Runs on SQLite and on PostgreSQL (DATABASE_URL).
"""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from kb.extract.extract import MAX_FILE_BYTES
from kb.records.models import ErrorRecord, Status
from kb.sources.learning import learn
from kb.sources.models import LearnedSite, LearnJob, Source
from tests.factories import import_lines, make_line
from tests.sources.support import GitRepo

pytestmark = pytest.mark.django_db

BROKEN = "the widget is broken beyond repair"
MISSING = "no such gadget in the drawer"
LATER = "a brand new failure appeared"

V1 = f'''def widget():
    raise ValueError("{BROKEN}")


def gadget():
    raise KeyError("{MISSING}")
'''


def _repo(tmp_path: Path) -> tuple[GitRepo, str]:
    repo = GitRepo(tmp_path / "shop")
    repo.write("shop/parts.py", V1)
    repo.write("shop/other.py", "def fine():\n    return 1\n")
    repo.write("tests/test_parts.py", 'def test():\n    raise ValueError("only in a test file")\n')
    return repo, repo.commit("first", tag="v1")


def _source(repo: GitRepo, **fields: object) -> Source:
    source = Source(
        location=str(repo.path), repo="acme/shop", web_url="https://example.com/acme/shop"
    )
    for name, value in fields.items():
        setattr(source, name, value)
    source.full_clean()
    source.save()
    return source


def _record(message: str) -> ErrorRecord:
    return ErrorRecord.objects.get(repo="acme/shop", error_message=message)


def test_a_first_learn_creates_a_record_per_site_with_its_source_fields(tmp_path: Path) -> None:
    repo, v1 = _repo(tmp_path)
    source = _source(repo)

    result = learn(source)

    assert result.revision == v1
    assert result.files_read == 2  # shop/*.py; the test file is skipped
    assert result.skipped == {"test": 1}
    assert (result.sites, result.created, result.updated, result.gone) == (2, 2, 0, 0)
    broken = _record(BROKEN)
    assert broken.file_path == "shop/parts.py"
    assert broken.line_number == 2
    assert broken.analyzed_sha == v1
    assert broken.status == Status.PUBLISHED
    assert v1 in broken.github_url
    site = LearnedSite.objects.get(record=broken)
    assert (site.source, site.path, site.line, site.revision, site.gone_since) == (
        source,
        "shop/parts.py",
        2,
        v1,
        "",
    )
    source.refresh_from_db()
    assert (source.last_revision, source.state) == (v1, Source.State.LEARNED)

    again = learn(source)  # the same revision: nothing changed, nothing read
    assert (again.files_read, again.created, again.updated) == (0, 0, 0)
    assert ErrorRecord.objects.filter(repo="acme/shop").count() == 2


def test_learning_again_reads_only_changed_files_moves_marks_gone_and_creates(
    tmp_path: Path,
) -> None:
    repo, v1 = _repo(tmp_path)
    source = _source(repo)
    learn(source)
    broken_id = _record(BROKEN).id
    missing_id = _record(MISSING).id

    # the widget's raise moves down four lines; the gadget's raise is removed; a new one
    repo.write(
        "shop/parts.py",
        f'"""Parts."""\n\nimport os\n\n\ndef widget():\n    raise ValueError("{BROKEN}")\n',
    )
    repo.write("shop/new.py", f'def new():\n    raise RuntimeError("{LATER}")\n')
    v2 = repo.commit("second", tag="v2")

    result = learn(source)

    assert result.since == v1
    assert result.files_read == 2  # parts.py and new.py; other.py is unchanged and not read
    assert (result.created, result.updated, result.gone) == (1, 1, 1)
    broken = ErrorRecord.objects.get(pk=broken_id)  # the same record, its site moved
    assert broken.line_number == 7
    assert broken.analyzed_sha == v2
    assert LearnedSite.objects.get(record_id=broken_id).line == 7
    gone = LearnedSite.objects.get(record_id=missing_id)
    assert gone.gone_since == v2
    assert ErrorRecord.objects.get(pk=missing_id).status == Status.PUBLISHED  # kept, matched
    assert _record(LATER).file_path == "shop/new.py"

    # the gadget comes back: its record is found again, no longer gone
    repo.write("shop/parts.py", V1)
    repo.commit("third")
    result = learn(source)
    assert result.created == 0
    assert LearnedSite.objects.get(record_id=missing_id).gone_since == ""


def test_a_deleted_file_marks_its_sites_gone_and_a_renamed_one_keeps_them(
    tmp_path: Path,
) -> None:
    repo, _v1 = _repo(tmp_path)
    source = _source(repo)
    learn(source)
    broken_id, missing_id = _record(BROKEN).id, _record(MISSING).id
    repo.git("mv", "shop/parts.py", "shop/widgets.py")
    v2 = repo.commit("rename")

    result = learn(source)

    assert result.created == 0
    assert ErrorRecord.objects.get(pk=broken_id).file_path == "shop/widgets.py"
    assert LearnedSite.objects.filter(source=source, gone_since="").count() == 2
    (repo.path / "shop" / "widgets.py").unlink()
    v3 = repo.commit("delete")
    result = learn(source)
    assert result.gone == 2
    assert set(
        LearnedSite.objects.filter(record_id__in=[broken_id, missing_id]).values_list(
            "gone_since", flat=True
        )
    ) == {v3}
    assert v2 != v3
    assert ErrorRecord.objects.filter(pk__in=[broken_id, missing_id]).count() == 2


def test_a_curators_edit_and_the_write_up_survive_a_re_learn(tmp_path: Path) -> None:
    repo, _v1 = _repo(tmp_path)
    source = _source(repo)
    learn(source)
    record = _record(BROKEN)
    record.documentation = "Written by a curator."
    record.slug = "curated-slug"
    record.curated_fields = ["documentation", "slug"]
    record.save()
    repo.write("shop/parts.py", "\n\n" + V1)
    repo.commit("moved")

    result = learn(source)

    record.refresh_from_db()
    assert result.updated == 2
    assert record.line_number == 4
    assert record.documentation == "Written by a curator."
    assert record.slug == "curated-slug"


def test_a_site_the_dataset_already_has_updates_that_record(tmp_path: Path) -> None:
    """The dataset's records were given ids another way: the site is found by repository,
    file and template, and its record keeps its id and its write-up; no duplicate."""
    repo, v1 = _repo(tmp_path)
    line = make_line(
        repo="acme/shop",
        filePath="shop/parts.py",
        lineNumber=40,
        errorMessage=BROKEN,
        messagePattern=BROKEN,
        documentation="From the dataset.",
    )
    import_lines(line)
    dataset_id = line["record"]["id"]

    result = learn(_source(repo))

    assert result.created == 1  # only the gadget's site is new
    assert ErrorRecord.objects.filter(repo="acme/shop", error_message=BROKEN).count() == 1
    record = ErrorRecord.objects.get(pk=dataset_id)
    assert (record.line_number, record.analyzed_sha) == (2, v1)
    assert record.documentation == "From the dataset."
    assert LearnedSite.objects.get(record=record).gone_since == ""


def test_a_source_set_to_drafts_creates_its_new_records_as_drafts(tmp_path: Path) -> None:
    repo, _v1 = _repo(tmp_path)
    learn(_source(repo, publish=False))
    assert set(ErrorRecord.objects.filter(repo="acme/shop").values_list("status", flat=True)) == {
        Status.DRAFT
    }


def test_the_learn_command_prints_the_contracts_json(tmp_path: Path) -> None:
    repo, v1 = _repo(tmp_path)
    out, err = io.StringIO(), io.StringIO()
    call_command(
        "learn", str(repo.path), "--rev", "v1", "--repo", "acme/shop", "--json",
        stdout=out, stderr=err,
    )  # fmt: skip
    data = json.loads(out.getvalue())
    assert list(data) == [
        "source", "revision", "releases", "files_read", "sites", "created", "updated",
        "unchanged", "gone", "seconds",
    ]  # fmt: skip
    assert data["source"] == str(repo.path)
    assert data["revision"] == v1
    assert (data["files_read"], data["sites"], data["created"]) == (2, 2, 2)
    assert isinstance(data["seconds"], float)
    assert "files read" in err.getvalue()  # progress goes to stderr, stdout stays JSON
    assert LearnJob.objects.get().state == LearnJob.State.DONE


def test_the_learn_command_fails_with_the_reason_and_loses_nothing(tmp_path: Path) -> None:
    import_lines(make_line(repo="local/nowhere"))
    with pytest.raises(CommandError, match="not a git repository"):
        call_command("learn", str(tmp_path), stdout=io.StringIO(), stderr=io.StringIO())
    job = LearnJob.objects.get()
    assert job.state == LearnJob.State.FAILED
    assert "not a git repository" in job.error
    assert job.source.state == Source.State.FAILED
    assert ErrorRecord.objects.count() == 1
    with pytest.raises(CommandError, match="not a version range"):
        call_command(
            "learn", "pypi:django", "--releases", "5.*", stdout=io.StringIO(), stderr=io.StringIO()
        )


def test_a_site_whose_file_changed_elsewhere_keeps_its_record_as_it_is(tmp_path: Path) -> None:
    """Only the records whose site moved or changed are written again: a site that reads
    the same at its line keeps the link and revision it has, which still show its code."""
    far = "\n" * 40 + "def more():\n    return 2\n"  # past the snippet's window of the sites
    repo = GitRepo(tmp_path / "shop")
    repo.write("shop/parts.py", V1 + far)
    v1 = repo.commit("first")
    source = _source(repo)
    learn(source)
    repo.write("shop/parts.py", V1 + far + "\n\ndef most():\n    return 3\n")
    v2 = repo.commit("an edit far from the sites")

    result = learn(source)

    assert (result.files_read, result.sites, result.updated, result.unchanged) == (1, 2, 0, 2)
    assert (_record(BROKEN).analyzed_sha, _record(MISSING).analyzed_sha) == (v1, v1)
    assert {site.revision for site in LearnedSite.objects.filter(source=source)} == {v2}

    repo.write("shop/parts.py", "\n" + V1 + far)  # every site one line down
    v3 = repo.commit("a line above the sites")
    assert learn(source).updated == 2
    assert (_record(BROKEN).line_number, _record(BROKEN).analyzed_sha) == (3, v3)


def test_learning_again_reads_only_the_files_changed_since_the_last_revision(
    tmp_path: Path,
) -> None:
    """Counts files, not sites: holds whatever the extractors find."""
    repo = GitRepo(tmp_path / "many")
    for n in range(5):
        repo.write(f"pkg/m{n}.py", f"X = {n}\n")
    repo.write("README.md", "not source\n")
    v1 = repo.commit("first")
    source = _source(repo)

    first = learn(source)
    assert (first.files_total, first.files_read, first.since) == (5, 5, "")

    repo.write("pkg/m3.py", "X = 33\n")
    repo.write("pkg/m9.py", "X = 9\n")
    (repo.path / "pkg" / "m0.py").unlink()
    v2 = repo.commit("second")
    second = learn(source)
    assert (second.revision, second.since) == (v2, v1)
    assert (second.files_total, second.files_read) == (2, 2)  # m3 and m9; m0 is gone

    third = learn(source)  # nothing changed since v2
    assert (third.files_total, third.files_read, third.since) == (0, 0, v2)


def test_files_too_large_or_not_utf8_are_skipped_and_counted(tmp_path: Path) -> None:
    repo = GitRepo(tmp_path / "odd")
    repo.write("pkg/ok.py", "X = 1\n")
    (repo.path / "pkg" / "latin.py").write_bytes(b'X = "caf\xe9"\n')
    (repo.path / "pkg" / "huge.py").write_bytes(b"#" * (MAX_FILE_BYTES + 1))
    repo.commit("first")

    result = learn(_source(repo))

    assert result.files_read == 1
    assert result.files_skipped == 2
    assert result.skipped == {f"larger than {MAX_FILE_BYTES} bytes": 1, "not UTF-8": 1}
    assert {"path": "pkg/latin.py", "reason": "not UTF-8 (byte 8)"} in result.problems


def _zip(path: Path, members: dict[str, tuple[bytes, int]]) -> Path:
    with zipfile.ZipFile(path, "w") as archive:
        for name, (data, mode) in members.items():
            info = zipfile.ZipInfo(name)
            info.external_attr = mode << 16
            archive.writestr(info, data)
    return path


def test_an_archive_is_learned_with_its_hostile_members_refused_and_listed(
    tmp_path: Path,
) -> None:
    archive = _zip(
        tmp_path / "shop-1.0.zip",
        {
            "shop-1.0/shop/ok.py": (b"X = 1\n", 0o100644),
            "shop-1.0/../../slip.py": (b"X = 2\n", 0o100644),
            "shop-1.0/shop/link.py": (b"/etc/passwd", 0o120777),
        },
    )
    out = io.StringIO()
    call_command("learn", str(archive), "--repo", "acme/shop", stdout=out, stderr=io.StringIO())
    job = LearnJob.objects.get()
    assert job.state == LearnJob.State.DONE
    assert (job.files_read, job.errors) == (1, 2)
    assert job.report["problems"] == [
        {"path": "shop-1.0/../../slip.py", "reason": "refused: a path outside the archive (..)"},
        {"path": "shop-1.0/shop/link.py", "reason": "refused: a link"},
    ]
    assert "refused: a link" in out.getvalue()
    assert not (tmp_path.parent / "slip.py").exists()


def test_a_bomb_fails_the_job_with_its_reason(tmp_path: Path, settings: object) -> None:
    settings.KB_ARCHIVE_MAX_BYTES = 100_000
    bomb = _zip(tmp_path / "bomb.zip", {"big.py": (b"\0" * 200_000, 0o100644)})
    with pytest.raises(CommandError, match="size bomb"):
        call_command("learn", str(bomb), stdout=io.StringIO(), stderr=io.StringIO())
    assert LearnJob.objects.get().state == LearnJob.State.FAILED
    assert not ErrorRecord.objects.exists()


def test_a_release_is_named_pypi_name_version_and_fetched_over_https_only(
    tmp_path: Path, settings: object
) -> None:
    with pytest.raises(CommandError, match="expected pypi:NAME==VERSION"):
        call_command("learn", "pypi:django", stdout=io.StringIO(), stderr=io.StringIO())
    with pytest.raises(CommandError, match="expected pypi:NAME==VERSION"):
        call_command("learn", "pypi:../x==1", stdout=io.StringIO(), stderr=io.StringIO())
    settings.KB_PACKAGE_INDEX_URL = "http://index.example/pypi"
    with pytest.raises(CommandError, match="must be reached over https"):
        call_command("learn", "pypi:django==5.2.8", stdout=io.StringIO(), stderr=io.StringIO())
    source = Source.objects.get(location="pypi:django==5.2.8")
    assert (source.repo, source.kind) == ("pypi/django", "release")


def test_the_same_message_twice_in_a_file_is_two_sites_kept_apart_across_learns(
    tmp_path: Path,
) -> None:
    repo = GitRepo(tmp_path / "twice")
    raising = f'    raise ValueError("{BROKEN}")\n'
    body = f"def a():\n{raising}\n\ndef b():\n{raising}"
    repo.write("pkg/twice.py", body)
    repo.commit("first")
    source = _source(repo)
    assert learn(source).created == 2
    by_line = dict(ErrorRecord.objects.filter(repo="acme/shop").values_list("line_number", "id"))
    assert sorted(by_line) == [2, 6]

    repo.write("pkg/twice.py", "import os\n" + body)
    repo.commit("moved")
    result = learn(source)

    assert (result.created, result.updated, result.gone) == (0, 2, 0)
    moved = dict(ErrorRecord.objects.filter(repo="acme/shop").values_list("id", "line_number"))
    assert moved == {by_line[2]: 3, by_line[6]: 7}


def _whole_record_loads(queries: list[dict[str, str]]) -> list[str]:
    """The queries that read records whole (every column, the write-up's included)."""
    return [
        q["sql"] for q in queries if "kb_errorrecord" in q["sql"] and "documentation" in q["sql"]
    ]


def test_a_relearn_reads_whole_only_the_records_whose_site_moved(tmp_path: Path) -> None:
    """A known site is compared on its own columns; only a record whose site moved is read
    whole (to be written back with its new place), never one that reads as stored."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    far = "\n" * 40 + "def more():\n    return 2\n"  # past the snippet's window of the sites
    apart = V1.replace("def gadget", "\n" * 40 + "def gadget") + far  # apart, too
    repo = GitRepo(tmp_path / "shop")
    repo.write("shop/parts.py", apart)
    repo.commit("first")
    source = _source(repo)
    learn(source)
    repo.write("shop/parts.py", apart + "\n\ndef most():\n    return 3\n")
    repo.commit("an edit far from the sites")
    with CaptureQueriesContext(connection) as unchanged:
        assert learn(source).unchanged == 2
    assert _whole_record_loads(unchanged.captured_queries) == []

    repo.write("shop/parts.py", apart.replace("def gadget", "\ndef gadget"))  # one line down
    repo.commit("a line above the second site")
    with CaptureQueriesContext(connection) as one_moved:
        result = learn(source)
    assert (result.updated, result.unchanged) == (1, 1)
    loads = _whole_record_loads(one_moved.captured_queries)
    gadget, widget = _record(MISSING).pk, _record(BROKEN).pk
    assert any(gadget in sql for sql in loads)
    assert not any(widget in sql for sql in loads)
