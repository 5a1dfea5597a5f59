"""The readers of sources: git through its plumbing (nothing a repository configures runs),
archives read in place with guards against zip-slip, links, devices and bombs."""

from __future__ import annotations

import io
import tarfile
import zipfile
from pathlib import Path

import pytest

from kb.sources.readers import SourceError, archives, git, index
from tests.sources.support import GitRepo


def _snapshot(repo: GitRepo, rev: str = "HEAD", since: str | None = None) -> git.Snapshot:
    return git.snapshot(git.GitRepository(git.git_dir_of(repo.path)), rev, since)


def test_git_lists_every_file_of_a_revision_and_only_what_changed_since_another(
    tmp_path: Path,
) -> None:
    repo = GitRepo(tmp_path / "repo")
    repo.write("a.py", "A = 1\n")
    repo.write("pkg/b.py", "B = 1\n")
    repo.write("pkg/c.py", "C = 1\n")
    first = repo.commit("one", tag="v1")
    repo.write("pkg/b.py", "B = 2\n")
    repo.git("mv", "pkg/c.py", "pkg/d.py")
    (repo.path / "a.py").unlink()
    (repo.path / "link.py").symlink_to("pkg/b.py")
    repo.commit("two")

    whole = _snapshot(repo, "v1")
    assert whole.revision == first
    assert sorted(f.path for f in whole.files) == ["a.py", "pkg/b.py", "pkg/c.py"]
    assert not whole.partial
    assert dict(whole.read(whole.files)) == dict(
        zip(whole.files, [b"A = 1\n", b"B = 1\n", b"C = 1\n"], strict=True)
    )

    step = _snapshot(repo, "HEAD", since="v1")
    assert step.partial
    assert sorted(f.path for f in step.files) == ["pkg/b.py", "pkg/d.py"]  # no link
    assert sorted(step.removed) == ["a.py", "pkg/c.py"]
    assert step.renamed == {"pkg/d.py": "pkg/c.py"}


def test_a_blob_the_repository_lacks_is_listed_and_the_rest_is_read(tmp_path: Path) -> None:
    # A mirror copied without its largest objects lists them in its trees all the same.
    repo = GitRepo(tmp_path / "repo")
    repo.write("a.py", "A = 1\n")
    repo.write("big.jar", "not here\n")
    repo.commit("one")
    blob = repo.git("rev-parse", "HEAD:big.jar")
    (repo.path / ".git" / "objects" / blob[:2] / blob[2:]).unlink()

    whole = _snapshot(repo)
    assert [f.path for f in whole.files] == ["a.py"]
    assert [(r.path, r.reason) for r in whole.refused] == [
        ("big.jar", "object missing from the repository")
    ]
    assert dict(whole.read(whole.files)) == {whole.files[0]: b"A = 1\n"}


def test_changes_between_revisions_are_read_without_renames_when_a_blob_is_missing(
    tmp_path: Path,
) -> None:
    """Rename detection reads blobs; a mirror without one still tells what changed (a
    walk of releases over a partial mirror goes on)."""
    repo = GitRepo(tmp_path / "repo")
    repo.write("old.py", "A = 1\n" * 50)
    first = repo.commit("one")
    blob = repo.git("rev-parse", "HEAD:old.py")
    repo.git("mv", "old.py", "new.py")
    repo.write("new.py", "A = 1\n" * 49 + "B = 2\n")
    second = repo.commit("two")
    repository = git.GitRepository(git.git_dir_of(repo.path))
    assert repository.changes(first, second) == ({"new.py"}, ["old.py"], {"new.py": "old.py"})
    (repo.path / ".git" / "objects" / blob[:2] / blob[2:]).unlink()
    assert repository.changes(first, second) == ({"new.py"}, ["old.py"], {})


def test_git_never_reads_a_revision_as_an_option(tmp_path: Path) -> None:
    repo = GitRepo(tmp_path / "repo")
    repo.write("a.py", "A = 1\n")
    repo.commit("one")
    reader = git.GitRepository(git.git_dir_of(repo.path))
    marker = tmp_path / "written"
    for rev in (f"--output={marker}", "-h", "HEAD\n--all"):
        with pytest.raises(SourceError, match="not a revision"):
            reader.resolve(rev)
    with pytest.raises(SourceError, match="no such commit"):
        reader.resolve("v9")
    assert not marker.exists()


def test_git_runs_nothing_the_repository_configures(tmp_path: Path) -> None:
    """An external diff, a textconv driver and hooks named by the repository's own config
    would run a program; the reader's git calls run none of them."""
    repo = GitRepo(tmp_path / "repo")
    marker = tmp_path / "ran"
    script = tmp_path / "evil.sh"
    script.write_text(f"#!/bin/sh\necho ran >> {marker}\n")
    script.chmod(0o755)
    repo.git("config", "diff.external", str(script))
    repo.git("config", "diff.evil.textconv", str(script))
    repo.git("config", "core.hooksPath", str(tmp_path))
    repo.write(".gitattributes", "*.py diff=evil\n")
    repo.write("a.py", "A = 1\n")
    repo.commit("one", tag="v1")
    repo.write("a.py", "A = 2\n")
    repo.commit("two")
    marker.unlink(missing_ok=True)  # the test's own commits may have run the hooks

    step = _snapshot(repo, "HEAD", since="v1")
    assert [f.path for f in step.files] == ["a.py"]
    assert next(iter(step.read(step.files)))[1] == b"A = 2\n"
    assert not marker.exists()


def test_a_path_that_is_no_repository_is_refused_with_its_reason(tmp_path: Path) -> None:
    with pytest.raises(SourceError, match="not a git repository"):
        git.git_dir_of(tmp_path)
    with pytest.raises(SourceError, match="no such directory"):
        git.git_dir_of(tmp_path / "missing")


def _zip(path: Path, members: list[tuple[str, bytes, int]]) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data, mode in members:
            info = zipfile.ZipInfo(name)
            info.external_attr = mode << 16
            archive.writestr(info, data)
    return path


def test_a_zip_with_a_zip_slip_entry_and_a_link_reads_only_its_plain_files(
    tmp_path: Path,
) -> None:
    path = _zip(
        tmp_path / "pkg-1.0.zip",
        [
            ("pkg-1.0/pkg/ok.py", b"OK = 1\n", 0o100644),
            ("pkg-1.0/../../evil.py", b"EVIL = 1\n", 0o100644),
            ("/etc/passwd.py", b"X = 1\n", 0o100644),
            ("pkg-1.0/pkg/link.py", b"/etc/passwd", 0o120777),
        ],
    )
    snap = archives.snapshot(path, max_bytes=10_000, max_files=10)
    assert [f.path for f in snap.files] == ["pkg/ok.py"]  # the sdist's top directory is off
    assert {r.path: r.reason for r in snap.refused} == {
        "pkg-1.0/../../evil.py": "a path outside the archive (..)",
        "/etc/passwd.py": "an absolute path",
        "pkg-1.0/pkg/link.py": "a link",
    }
    assert [data for _f, data in snap.read(snap.files)] == [b"OK = 1\n"]
    assert not (tmp_path.parent / "evil.py").exists()


def _tar(path: Path, members: list[tarfile.TarInfo], data: dict[str, bytes]) -> Path:
    with tarfile.open(path, "w:gz") as archive:
        for info in members:
            payload = data.get(info.name)
            if payload is not None:
                info.size = len(payload)
            archive.addfile(info, io.BytesIO(payload) if payload is not None else None)
    return path


def _info(name: str, kind: bytes = tarfile.REGTYPE, link: str = "") -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.linkname = kind, link
    return info


def test_a_tarball_refuses_links_devices_and_paths_outside_it(tmp_path: Path) -> None:
    path = _tar(
        tmp_path / "pkg-1.0.tar.gz",
        [
            _info("pkg-1.0/ok.py"),
            _info("pkg-1.0/sym.py", tarfile.SYMTYPE, "/etc/passwd"),
            _info("pkg-1.0/hard.py", tarfile.LNKTYPE, "pkg-1.0/ok.py"),
            _info("pkg-1.0/dev.py", tarfile.CHRTYPE),
            _info("pkg-1.0/fifo.py", tarfile.FIFOTYPE),
            _info("../slip.py"),
        ],
        {"pkg-1.0/ok.py": b"OK = 1\n", "../slip.py": b"S = 1\n"},
    )
    snap = archives.snapshot(path, max_bytes=100_000, max_files=10)
    assert [f.path for f in snap.files] == ["ok.py"]  # the top directory of what is kept: off
    reasons = {r.path: r.reason for r in snap.refused}
    assert reasons == {
        "pkg-1.0/sym.py": "a link (to /etc/passwd)",
        "pkg-1.0/hard.py": "a link (to pkg-1.0/ok.py)",
        "pkg-1.0/dev.py": "not a regular file (a device, FIFO or other special file)",
        "pkg-1.0/fifo.py": "not a regular file (a device, FIFO or other special file)",
        "../slip.py": "a path outside the archive (..)",
    }
    assert [data for _f, data in snap.read(snap.files)] == [b"OK = 1\n"]


def test_size_and_file_count_bombs_are_refused_whole(tmp_path: Path) -> None:
    zeros = b"\0" * 200_000  # compresses to a few hundred bytes
    tar_bomb = _tar(tmp_path / "bomb.tar.gz", [_info("big.py")], {"big.py": zeros})
    assert tar_bomb.stat().st_size < 5_000
    with pytest.raises(SourceError, match="more than 100000 bytes"):
        archives.snapshot(tar_bomb, max_bytes=100_000, max_files=10)
    zip_bomb = _zip(tmp_path / "bomb.zip", [("big.py", zeros, 0o100644)])
    with pytest.raises(SourceError, match="more than 100000 bytes"):
        archives.snapshot(zip_bomb, max_bytes=100_000, max_files=10)
    many = _zip(tmp_path / "many.zip", [(f"f{i}.py", b"X = 1\n", 0o100644) for i in range(11)])
    with pytest.raises(SourceError, match="more than 10 members"):
        archives.snapshot(many, max_bytes=100_000, max_files=10)
    assert len(archives.snapshot(many, max_bytes=100_000, max_files=11).files) == 11


def test_a_file_that_is_no_archive_is_refused_with_its_reason(tmp_path: Path) -> None:
    fake = tmp_path / "fake.tar.gz"
    fake.write_bytes(b"not gzip at all")
    with pytest.raises(SourceError, match="not a readable archive"):
        archives.snapshot(fake, max_bytes=1000, max_files=10)
    rar = tmp_path / "x.rar"
    rar.write_bytes(b"Rar!")
    with pytest.raises(SourceError, match=r"not a \.tar\.gz"):
        archives.snapshot(rar, max_bytes=1000, max_files=10)
    with pytest.raises(SourceError, match="no such file"):
        archives.snapshot(tmp_path / "gone.zip", max_bytes=1000, max_files=10)


def test_only_https_and_ssh_remotes_are_mirrored(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    for url in (
        f"--upload-pack=touch {marker}",
        f"ext::sh -c touch% {marker}",
        "file:///etc",
        "/local/path",
        "https://",
    ):
        with pytest.raises(SourceError, match="not an https:// or ssh:// remote"):
            git.mirror_remote(url, tmp_path / "cache")
    assert not marker.exists()
    assert not (tmp_path / "cache").exists()


def test_links_start_from_a_github_origin_in_any_form_git_accepts_and_no_other(
    tmp_path: Path,
) -> None:
    for remote in (
        "https://github.com/acme/widgets.git",
        "https://github.com/acme/widgets",
        "git@github.com:acme/widgets.git",
        "ssh://git@github.com/acme/widgets.git",
    ):
        assert git.github_page(remote) == "https://github.com/acme/widgets", remote
    for remote in (
        "https://gitlab.com/acme/widgets.git",
        "https://github.com.evil.example/acme/widgets",
        "https://github.com/acme/widgets/../../x",
        "file:///srv/widgets",
    ):
        assert git.github_page(remote) == "", remote
    repo = GitRepo(tmp_path / "r")
    repo.commit("first")
    repository = git.GitRepository(git.git_dir_of(repo.path))
    assert git.snapshot(repository, "HEAD", None).web_url == ""
    repo.git("remote", "add", "origin", "git@github.com:acme/widgets.git")
    assert git.snapshot(repository, "HEAD", None).web_url == "https://github.com/acme/widgets"


def test_a_release_is_picked_from_the_simple_apis_listing_sdist_first() -> None:
    """The index's listing (PEP 691) names files, not releases: the sdist of exactly the
    version asked for, its project name compared as the index compares names, else a
    pure-Python wheel; never a built wheel, another version or a yanked file."""
    files = [
        {"filename": "SQLAlchemy-2.0.36-cp312-cp312-manylinux_x86_64.whl", "url": "a"},
        {"filename": "SQLAlchemy-2.0.36-py3-none-any.whl", "url": "b"},
        {"filename": "SQLAlchemy-2.0.35.tar.gz", "url": "c"},
        {"filename": "sqlalchemy-2.0.36.tar.gz", "url": "d", "yanked": "broken"},
        {"filename": "SQLAlchemy-2.0.36.tar.gz", "url": "e"},
    ]
    assert index._pick(files, "sqlalchemy", "2.0.36")["url"] == "e"
    assert index._pick(files[:3], "SQLAlchemy", "2.0.36")["url"] == "b"
    with pytest.raises(SourceError, match="no source archive"):
        index._pick(files[:1], "sqlalchemy", "2.0.36")
    with pytest.raises(SourceError, match="https"):
        index.download_release(
            "sqlalchemy", "2.0.36", Path("/nonexistent"), index_url="http://pypi.test/simple",
            max_bytes=1,
        )  # fmt: skip


def test_a_pypi_release_links_its_files_on_the_index_inspector(tmp_path: Path) -> None:
    """A release has no repository to link to, but PyPI's inspector shows every file of it
    with line anchors: records learned from it link there; another index's files get no
    link rather than a wrong one."""
    file_url = "https://files.pythonhosted.org/packages/50/65/abc/sqlalchemy-2.0.36.tar.gz#sha256=x"
    page = index.browse_url("SQLAlchemy", "2.0.36", file_url)
    assert page == (
        "https://inspector.pypi.io/project/sqlalchemy/2.0.36/"
        "packages/50/65/abc/sqlalchemy-2.0.36.tar.gz"
    )
    assert index.browse_url("sqlalchemy", "2.0.36", "https://mirror.test/f.tar.gz") == ""

    release = tmp_path / "sqlalchemy-2.0.36.tar.gz"
    with tarfile.open(release, "w:gz") as tar:
        data = b"raise ValueError('a message long enough')\n"
        info = tarfile.TarInfo("sqlalchemy-2.0.36/lib/sqlalchemy/orm/query.py")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    snap = archives.snapshot(
        release, max_bytes=1 << 20, max_files=10, revision="2.0.36", browse_url=page
    )
    assert [f.path for f in snap.files] == ["lib/sqlalchemy/orm/query.py"]
    assert snap.link == page + "/sqlalchemy-2.0.36/{path}#line.{line}"
