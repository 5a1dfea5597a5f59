"""Release names in version order, from tags of every scheme the sources use."""

from __future__ import annotations

import pytest

from kb.extract.versions import (
    VersionError,
    is_prerelease,
    sorted_versions,
    version_key,
    version_of,
)


def test_numbers_compare_as_numbers_and_missing_parts_as_zero() -> None:
    assert version_key("1.10") > version_key("1.9")
    assert version_key("1.4") == version_key("1.4.0")
    assert version_key("2.0.0") > version_key("1.99.99")


@pytest.mark.parametrize(
    "older",
    ["2.0.0.dev1", "2.0a1", "2.0.0-alpha.2", "2.0b1", "2.0.0-beta", "2.0rc1", "2.0.0-rc.2",
     "1.9.9"],
)  # fmt: skip
def test_a_pre_release_sorts_before_its_release_and_after_the_one_before(older: str) -> None:
    assert version_key(older) < version_key("2.0.0") < version_key("2.0.0.post1")


def test_pre_release_kinds_in_their_order() -> None:
    names = ["3.5.0", "3.5.0-rc.1", "3.5.0-alpha.0", "3.5.0-beta.1", "3.5.0-rc.0", "3.4.9"]
    assert sorted_versions(names) == [
        "3.4.9", "3.5.0-alpha.0", "3.5.0-beta.1", "3.5.0-rc.0", "3.5.0-rc.1", "3.5.0",
    ]  # fmt: skip
    assert is_prerelease("3.5.0-rc.1")
    assert not is_prerelease("3.5.0")


@pytest.mark.parametrize(
    ("tag", "pattern", "separator", "version"),
    [
        ("rel_1_3_24", "rel_*", "_", "1.3.24"),
        ("rel_2_0_0b1", "rel_*", "_", "2.0.0b1"),
        ("v3.5.0-rc.1", "v*", ".", "3.5.0-rc.1"),
        ("client/v3.5.0", "client/v*", ".", "3.5.0"),
        ("2.8.1", "*", ".", "2.8.1"),
        ("client/v3.5.0", "v*", ".", None),  # another module's tag
        ("rel_latest", "rel_*", "_", None),  # not a version
        ("v", "v*", ".", None),
    ],
)
def test_version_of_a_tag(tag: str, pattern: str, separator: str, version: str | None) -> None:
    assert version_of(tag, pattern, separator) == version


def test_a_name_that_is_no_version_is_refused_and_left_out_of_a_sort() -> None:
    with pytest.raises(VersionError):
        version_key("trunk")
    assert sorted_versions(["trunk", "1.0", "0.9"]) == ["0.9", "1.0"]
