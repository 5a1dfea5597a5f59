"""Learning a source's releases from a small real git repository built in the test: tags
as releases in version order, a message reworded in place, a file renamed, a site
removed, two sites that swap wordings, and the source's revision past its last tag.

Runs on SQLite and on PostgreSQL (DATABASE_URL).
"""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command

from kb.records.models import ErrorRecord
from kb.sources.history import git_releases, learn_releases
from kb.sources.models import LearnedSite, Source
from kb.sources.readers import SourceError, git
from tests.factories import import_lines, make_line
from tests.sources.index_server import https_index
from tests.sources.support import GitRepo

pytestmark = pytest.mark.django_db

OLD_ROW = "No row was found for one()"
NEW_ROW = "No row was found when one was required"
REFUSED = "Connection to the host was refused by the server"
REFUSED_NOW = "Connection to the host was refused by the remote server"
GIZMO = "Gizmo could not be calibrated in time"
ALPHA = "Alpha table lookup failed badly"
BETA = "Beta table lookup failed badly"


def _module(row: str, *, gizmo: bool = True, swap: bool = False, refused: str = REFUSED,
            pad: int = 0) -> str:  # fmt: skip
    alpha, beta = (BETA, ALPHA) if swap else (ALPHA, BETA)
    parts = ['"""Parts."""\n' + "\n" * pad]
    parts.append(f'def widget():\n    raise ValueError("{row}")\n')
    parts.append(f'def gadget(x):\n    raise KeyError("{refused}")\n')
    if gizmo:
        parts.append(f'def gizmo():\n    raise RuntimeError("{GIZMO}")\n')
    parts.append(f'def alpha():\n    raise LookupError("{alpha}")\n')
    parts.append(f'def beta():\n    raise LookupError("{beta}")\n')
    return "\n\n".join(parts)


def _history_repo(tmp_path: Path) -> tuple[GitRepo, dict[str, str]]:
    """Releases 1.0 (rel_1_0), 1.1 (reworded, lines moved), 2.0 (file renamed, gizmo
    removed, alpha and beta swap wordings), then a commit past the last tag."""
    repo = GitRepo(tmp_path / "shop")
    commits = {}
    repo.write("shop/parts.py", _module(OLD_ROW))
    commits["1.0"] = repo.commit("first release", tag="rel_1_0")
    repo.write("shop/parts.py", _module(NEW_ROW, pad=3))
    commits["1.1"] = repo.commit("Say what one() wanted", tag="rel_1_1")
    repo.git("mv", "shop/parts.py", "shop/widgets.py")
    repo.write("shop/widgets.py", _module(NEW_ROW, pad=3, gizmo=False))
    # a pre-release, tagged 2_0_0b1: sorts before 2.0 (and after 1.1)
    commits["2.0.0b1"] = repo.commit("Widgets get their own module", tag="rel_2_0_0b1")
    repo.write("shop/widgets.py", _module(NEW_ROW, pad=3, gizmo=False, swap=True))
    commits["2.0"] = repo.commit("Swap", tag="rel_2_0")
    repo.write("shop/widgets.py", _module(NEW_ROW, pad=3, gizmo=False, swap=True,
                                          refused=REFUSED_NOW))  # fmt: skip
    commits["head"] = repo.commit("Name the remote end")
    return repo, commits


def _source(repo: GitRepo, **fields: Any) -> Source:
    source = Source(location=str(repo.path), repo="acme/shop", releases="rel_*", **fields)
    source.full_clean()
    source.save()
    return source


def _by_message(message: str) -> ErrorRecord:
    return ErrorRecord.objects.get(repo="acme/shop", error_message=message)


def test_tags_are_releases_in_version_order_from_since_on(tmp_path: Path) -> None:
    repo = GitRepo(tmp_path / "r")
    for tag in ("rel_1_10_0", "rel_1_9_0", "rel_1_3_0b1", "rel_1_3_0", "rel_0_9",
                "client/v3.5.0", "v3.5.0", "v3.5.0-rc.1", "v3.10.0"):  # fmt: skip
        repo.commit(tag, tag=tag)
    repository = git.GitRepository(git.git_dir_of(repo.path))
    assert [r.version for r in git_releases(repository, "rel_*")] == [
        "0.9", "1.3.0b1", "1.3.0", "1.9.0", "1.10.0",
    ]  # fmt: skip
    # a pre-release comes before its release, so from 1.3 on leaves it out
    assert [r.version for r in git_releases(repository, "rel_*", since="1.3")] == [
        "1.3.0", "1.9.0", "1.10.0",
    ]  # fmt: skip
    assert [(r.version, r.ref) for r in git_releases(repository, "v*")] == [
        ("3.5.0-rc.1", "v3.5.0-rc.1"), ("3.5.0", "v3.5.0"), ("3.10.0", "v3.10.0"),
    ]  # fmt: skip
    assert [r.version for r in git_releases(repository, "client/v*")] == ["3.5.0"]
    with pytest.raises(SourceError, match="not a version"):
        git_releases(repository, "rel_*", since="one")


def test_a_reworded_message_keeps_one_record_with_both_wordings_and_their_ranges(
    tmp_path: Path,
) -> None:
    repo, commits = _history_repo(tmp_path)
    result = learn_releases(_source(repo))

    assert result.releases == 4  # 1.0, 1.1, 2.0.0b1, 2.0 (and the revision past them)
    widget = _by_message(NEW_ROW)
    assert not ErrorRecord.objects.filter(error_message=OLD_ROW).exists()
    assert (widget.first_release, widget.last_release, widget.removed_in) == ("1.0", "2.0", None)
    history = widget.release_history
    assert [(w["message"], w["firstRelease"], w["lastRelease"]) for w in history["wordings"]] == [
        (OLD_ROW, "1.0", "1.0"), (NEW_ROW, "1.1", "2.0"),
    ]  # fmt: skip
    assert history["wordings"][0]["pattern"] == r"No row was found for one\(\)"
    introduced = history["wordings"][1]["introducedBy"]
    assert (introduced["sha"], introduced["subject"]) == (commits["1.1"], "Say what one() wanted")
    assert history["lastChangedBy"]["sha"] == commits["1.1"]
    # where it was: moved down in 1.1, renamed in the pre-release 2.0.0b1
    assert [(p["path"], p["line"], p["firstRelease"], p["lastRelease"])
            for p in history["locations"]] == [
        ("shop/parts.py", 5, "1.0", "1.0"),
        ("shop/parts.py", 8, "1.1", "1.1"),
        ("shop/widgets.py", 8, "2.0.0b1", "2.0"),
    ]  # fmt: skip
    assert widget.file_path == "shop/widgets.py"


def test_a_removed_site_keeps_its_record_taken_at_the_last_release_that_had_it(
    tmp_path: Path,
) -> None:
    repo, commits = _history_repo(tmp_path)
    result = learn_releases(_source(repo))
    gizmo = _by_message(GIZMO)
    assert (gizmo.first_release, gizmo.last_release, gizmo.removed_in) == ("1.0", "1.1", "2.0.0b1")
    assert gizmo.file_path == "shop/parts.py"
    assert gizmo.analyzed_sha == commits["1.1"]
    assert GIZMO in gizmo.source_code
    assert result.removed == 1
    site = LearnedSite.objects.get(record=gizmo)
    assert site.gone_since == "2.0.0b1"


def test_two_sites_that_swap_wordings_stay_two_sites_each_with_its_history(
    tmp_path: Path,
) -> None:
    repo, _commits = _history_repo(tmp_path)
    learn_releases(_source(repo))
    alpha = ErrorRecord.objects.get(repo="acme/shop", error_message=BETA, line_number__lt=30)
    beta = ErrorRecord.objects.get(repo="acme/shop", error_message=ALPHA)
    assert [w["message"] for w in alpha.release_history["wordings"]] == [ALPHA, BETA]
    assert [w["message"] for w in beta.release_history["wordings"]] == [BETA, ALPHA]
    assert ErrorRecord.objects.filter(repo="acme/shop").count() == 5


def test_the_revision_past_the_last_tag_gives_the_current_wording_and_the_datasets_record(
    tmp_path: Path,
) -> None:
    """The dataset's snapshot is newer than the last tag: its record is found by the
    current wording and gains the older one as a wording of the releases."""
    repo, _commits = _history_repo(tmp_path)
    line = make_line(repo="acme/shop", filePath="shop/widgets.py", lineNumber=9,
                     errorMessage=REFUSED_NOW, messagePattern=REFUSED_NOW,
                     documentation="From the dataset.")  # fmt: skip
    import_lines(line)
    learn_releases(_source(repo))
    record = ErrorRecord.objects.get(pk=line["record"]["id"])
    assert record.documentation == "From the dataset."
    assert record.error_message == REFUSED_NOW
    wordings = record.release_history["wordings"]
    assert [(w["message"], w["firstRelease"], w["lastRelease"]) for w in wordings] == [
        (REFUSED, "1.0", "2.0"), (REFUSED_NOW, None, None),
    ]  # fmt: skip
    assert (record.first_release, record.last_release) == ("1.0", "2.0")
    assert not ErrorRecord.objects.filter(error_message=REFUSED).exists()


def test_a_second_walk_changes_nothing(tmp_path: Path) -> None:
    repo, _commits = _history_repo(tmp_path)
    source = _source(repo)
    first = learn_releases(source)
    again = learn_releases(source)
    assert (again.created, again.updated) == (0, 0)
    assert again.unchanged == first.created


def test_the_learn_command_walks_releases_and_prints_the_contracts_json(tmp_path: Path) -> None:
    repo, commits = _history_repo(tmp_path)
    out = io.StringIO()
    call_command(
        "learn", str(repo.path), "--releases", "rel_*", "--since", "1.1", "--repo", "acme/shop",
        "--json", stdout=out, stderr=io.StringIO(),
    )  # fmt: skip
    data = json.loads(out.getvalue())
    assert list(data) == [
        "source", "revision", "releases", "files_read", "sites", "created", "updated",
        "unchanged", "gone", "seconds",
    ]  # fmt: skip
    assert data["releases"] == 3
    # 1.1 read whole, then the one file each later point changed (2.0.0b1, 2.0, HEAD)
    assert data["files_read"] == 4
    assert data["revision"] == git.GitRepository(git.git_dir_of(repo.path)).resolve("HEAD")
    assert _by_message(NEW_ROW).first_release == "1.1"
    _ = commits


# --- a package-index source -----------------------------------------------------------

CORE = "widgets/core.py"
HELPERS = "widgets/helpers.py"
PICKLE = "Cannot pickle the widget into a file"


def _sdist(version: str, members: dict[str, str]) -> bytes:
    """An sdist as the index serves it: a .tar.gz under ``widgets-VERSION/``."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for name, text in members.items():
            data = text.encode()
            info = tarfile.TarInfo(f"widgets-{version}/{name}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def _releases() -> dict[str, bytes]:
    helpers = f'def pickle():\n    raise TypeError("{PICKLE}")\n'
    core_old = _module(OLD_ROW)
    core_new = _module(NEW_ROW, pad=3)
    return {
        "widgets-1.0.tar.gz": _sdist("1.0", {CORE: core_old, HELPERS: helpers}),
        "widgets-1.1.tar.gz": _sdist("1.1", {CORE: core_new, HELPERS: helpers}),
        "widgets-2.0rc1.tar.gz": _sdist("2.0rc1", {CORE: core_new}),  # left out: a pre-release
        # 2.0: helpers.py moved to widgets/util.py (same bytes), gizmo's site removed
        "widgets-2.0.tar.gz": _sdist(
            "2.0", {CORE: _module(NEW_ROW, pad=3, gizmo=False), "widgets/util.py": helpers}
        ),
        "widgets-0.9.tar.gz": _sdist("0.9", {CORE: "x = 1\n"}),  # before the range
    }


def test_a_package_index_source_reads_each_release_and_only_the_files_that_changed(
    tmp_path: Path, settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SSL_CERT_FILE", str(tmp_path / "cert.pem"))
    with https_index(tmp_path, "widgets", _releases()) as url:
        settings.KB_PACKAGE_INDEX_URL = url
        source = Source(location="pypi:widgets", releases=">=1.0")
        source.full_clean()
        source.save()
        result = learn_releases(source)

    assert (source.repo, result.releases) == ("pypi/widgets", 3)  # 1.0, 1.1, 2.0
    # 1.0: both files; 1.1: core.py only; 2.0: core.py, and util.py (helpers.py's bytes
    # at a new path: read, its site the same site)
    assert result.files_read == 5
    widget = ErrorRecord.objects.get(repo="pypi/widgets", error_message=NEW_ROW)
    assert [(w["message"], w["firstRelease"], w["lastRelease"])
            for w in widget.release_history["wordings"]] == [
        (OLD_ROW, "1.0", "1.0"), (NEW_ROW, "1.1", "2.0"),
    ]  # fmt: skip
    gizmo = ErrorRecord.objects.get(repo="pypi/widgets", error_message=GIZMO)
    assert (gizmo.last_release, gizmo.removed_in) == ("1.1", "2.0")
    assert "inspector" not in gizmo.github_url  # not PyPI's files: no page to link
    pickle = ErrorRecord.objects.get(repo="pypi/widgets", error_message=PICKLE)
    assert [(p["path"], p["firstRelease"], p["lastRelease"])
            for p in pickle.release_history["locations"]] == [
        (HELPERS, "1.0", "1.1"), ("widgets/util.py", "2.0", "2.0"),
    ]  # fmt: skip
    assert pickle.removed_in is None


def test_a_range_that_is_not_pep_440_is_refused_before_any_download(settings: Any) -> None:
    settings.KB_PACKAGE_INDEX_URL = "https://localhost:9/simple"  # never reached
    source = Source(location="pypi:widgets", releases="1.*")
    source.save()
    with pytest.raises(SourceError, match="not a version range"):
        learn_releases(source)
