"""``kb.extract.records`` and ``kb.extract.identity``: a site as a dataset record.

The pattern table holds real records of ``records-all.jsonl`` (file, message, pattern as
the dataset has them), each with the notation its call writes placeholders in: a learned
site of a dataset record must yield the dataset's own pattern and slug. Records are
checked by the project's own validation (the importer's schema and the admin's pattern
rules, with real Hyperscan), not by a copy of it.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from kb.extract.identity import normalise_template, pair_in_order, site_key
from kb.extract.records import (
    MIN_LITERAL,
    NotAdmissible,
    admissible,
    message_pattern,
    slug,
    tags,
    to_record,
    to_records,
)
from kb.extract.sites import ErrorType, Notation, Severity, Site
from kb.records.schema import FIELDS, parse_record
from kb.records.validation import admit_pattern, message_is_matched, validate_record
from tests.datasets import ALL_RECORDS, dataset_path

N = Notation
SEED = Path(__file__).resolve().parents[2] / "fixtures" / "seed-record.jsonl"

# (notation, errorMessage, messagePattern, slug) of real dataset records.
DATASET_PATTERNS: list[tuple[Notation, str, str, str]] = [
    (  # risingwave src/stream/src/executor/backfill/utils.rs: bail!
        N.RUST,
        "Backfill progress for vnode {:#?} not found, backfill_state not initialized properly",
        "Backfill progress for vnode (.+?) not found, backfill_state not initialized properly",
        "backfill-progress-for-vnode-not-found-backf",
    ),
    (  # risingwave src/common/src/types/datetime.rs: escaped braces
        N.RUST,
        "Can't cast string to time (expected format is HH:MM:SS[.D+{{up to 6 digits}}][Z] "
        "or HH:MM)",
        r"Can't cast string to time \(expected format is HH:MM:SS\[\.D\+\{up to 6 digits\}\]"
        r"\[Z\] or HH:MM\)",
        "can-t-cast-string-to-time-expected-format-i",
    ),
    (  # risingwave src/common/src/hash/consistent_hash/mapping.rs: named and debug
        N.RUST,
        "mapping at index `{idx}` is set to both `{prev:?}` and `{item:?}`",
        "mapping at index `(.+?)` is set to both `(.+?)` and `(.+?)`",
        "mapping-at-index-is-set-to-both-and",
    ),
    (N.RUST, "Storage error: {0}", "Storage error: (.+?)", "storage-error"),  # #[error]
    (  # django/views/generic/dates.py: %% is one literal percent
        N.PYTHON_PERCENT,
        "ISO week directive '%s' is incompatible with the year directive '%s'. "
        "Use the ISO year '%%G' instead.",
        r"ISO week directive '(.+?)' is incompatible with the year directive '(.+?)'\. "
        r"Use the ISO year '%G' instead\.",
        "iso-week-directive-is-incompatible-with-the",
    ),
    (  # django/template/base.py: braces are text in a %-formatted message
        N.PYTHON_PERCENT,
        "{%% %s %%} must be the first tag in %s.",
        r"\{% (.+?) %\} must be the first tag in (.+?)\.",
        "must-be-the-first-tag-in",
    ),
    (  # django/template/loader_tags.py
        N.PYTHON_PERCENT,
        "'%s' object has no attribute 'context'. Did you use {{ block.super }} in a base template?",
        r"'(.+?)' object has no attribute 'context'\. Did you use \{\{ block\.super \}\} in a "
        r"base template\?",
        "object-has-no-attribute-context-did-you-use",
    ),
    (  # django/db/models/base.py: named conversions
        N.PYTHON_PERCENT,
        "%(model_name)s with this %(field_labels)s already exists.",
        r"(.+?) with this (.+?) already exists\.",
        "with-this-already-exists",
    ),
    (  # sqlalchemy lib/sqlalchemy/pool/base.py: an f-string, %-formatted afterwards
        N.PYTHON_FORMAT,
        "Exception {'terminating' if terminate else 'closing'} connection %r",
        "Exception (.+?) connection (.+?)",
        "exception-connection",
    ),
    (  # django/utils/deprecation.py: f-string
        N.PYTHON_FORMAT,
        "{func_name}() takes at most {max_positional_args} positional argument(s) (including "
        "{num_remappable_args} deprecated) but {num_positional_args} were given.",
        r"(.+?)\(\) takes at most (.+?) positional argument\(s\) \(including (.+?) deprecated\) "
        r"but (.+?) were given\.",
        "takes-at-most-positional-argument-s-includi",
    ),
    (  # sqlalchemy lib/sqlalchemy/sql/naming.py: not formatted, so %(name)s is text
        N.PLAIN,
        "Naming convention including %(constraint_name)s token requires that constraint is "
        "explicitly named.",
        r"Naming convention including %\(constraint_name\)s token requires that constraint is "
        r"explicitly named\.",
        "naming-convention-including-constraint-name",
    ),
    (  # django/template/base.py: exception args, never formatted
        N.PLAIN,
        "Failed lookup for key [%s] in %r",
        r"Failed lookup for key \[%s\] in %r",
        "failed-lookup-for-key-s-in-r",
    ),
    (  # etcd server/etcdserver/metrics.go: a zap message, not a format
        N.PLAIN,
        "80% of file descriptors are used",
        "80% of file descriptors are used",
        "80-of-file-descriptors-are-used",
    ),
    (  # etcd client/pkg/transport/listener_tls.go: a verb, then a concatenated part
        N.PRINTF,
        "tls: %q does not match any of DNSNames %q{}",
        "tls: (.+?) does not match any of DNSNames (.+?)(.+?)",
        "tls-does-not-match-any-of-dnsnames",
    ),
    (  # kafka tools/.../MetadataQuorumCommand.java: String.format's %n
        N.PRINTF,
        "Error while computing relative time, possible drift in system clock.%nCurrent "
        "timestamp is %d, %s timestamp is %d",
        "Error while computing relative time, possible drift in system clock\\.\nCurrent "
        "timestamp is (.+?), (.+?) timestamp is (.+?)",
        "error-while-computing-relative-time-possibl",
    ),
    (  # kafka clients/.../SslFactory.java: braces are text in String.format
        N.PRINTF,
        "Keystore DistinguishedName does not match:  existing={alias=%s, DN=%s}, "
        "new={alias=%s, DN=%s}",
        r"Keystore DistinguishedName does not match:  existing=\{alias=(.+?), DN=(.+?)\}, "
        r"new=\{alias=(.+?), DN=(.+?)\}",
        "keystore-distinguishedname-does-not-match-e",
    ),
    (  # kafka raft/.../QuorumConfig.java: SLF4J fills {} only
        N.SLF4J,
        "Invalid configuration value for {}. Each entry should be in the form "
        "`{id}@{host}:{port}`.",
        r"Invalid configuration value for (.+?)\. Each entry should be in the form "
        r"`\{id\}@\{host\}:\{port\}`\.",
        "invalid-configuration-value-for-each-entry",
    ),
    (  # kafka streams/.../ProcessorStateManager.java (cut short): ${...} is text in Java
        N.SLF4J,
        "Failed to write offset checkpoint file to [{}]. This may occur if OS cleaned the "
        "state.dir in case when it located in ${java.io.tmpdir} directory.",
        r"Failed to write offset checkpoint file to \[(.+?)\]\. This may occur if OS cleaned the "
        r"state\.dir in case when it located in \$\{java\.io\.tmpdir\} directory\.",
        "failed-to-write-offset-checkpoint-file-to-t",
    ),
]


@pytest.mark.parametrize(("notation", "message", "pattern", "expected_slug"), DATASET_PATTERNS)
def test_pattern_and_slug_are_the_datasets(
    notation: Notation, message: str, pattern: str, expected_slug: str
) -> None:
    assert message_pattern(message, notation) == pattern
    assert slug(message, notation) == expected_slug


@pytest.mark.parametrize(
    ("notation", "message", "pattern"),
    [
        (N.SCALA, "Unknown topic $topic in ${request.name}", r"Unknown topic (.+?) in (.+?)"),
        (N.SCALA, "costs $$5 for {} now", r"costs \$5 for (.+?) now"),
        (N.JAVA_MESSAGE_FORMAT, "Can''t read {0} at {1,number}", r"Can't read (.+?) at (.+?)"),
        (N.PRINTF, "offset %[1]d past %2$s (100%%)", r"offset (.+?) past (.+?) \(100%\)"),
        (N.PYTHON_PERCENT, "cannot cache {} under %(key)r", r"cannot cache (.+?) under (.+?)"),
    ],
)
def test_notations_the_dataset_lacks(notation: Notation, message: str, pattern: str) -> None:
    assert message_pattern(message, notation) == pattern


def site(**changes: Any) -> Site:
    values: dict[str, Any] = {
        "path": "src/meta/src/barrier/worker.rs",
        "line": 40,
        "end_line": 42,
        "template": "no active streaming workers for {} (epoch {:?})",
        "notation": N.RUST,
        "error_type": ErrorType.ERROR_RETURN,
        "error_class": "MetaError",
        "function": "impl GlobalBarrierWorker::reschedule",
        "call": "bail!",
    }
    values.update(changes)
    return Site(**values)


FILE = [f"line {n}" for n in range(1, 101)]  # a 100-line file, as text.split("\n")
AT = datetime(2026, 9, 11, 21, 6, 21, 487000, tzinfo=UTC)
REVISION = "448c6570b1b9d636736708340f61a85900c2b7d7"


def record(s: Site, lines: list[str] = FILE, url: str | None = "https://github.com/o/r") -> Any:
    return to_record(s, repo="o/r", revision=REVISION, lines=lines, url=url, at=AT)


class Draft:
    """The attributes `validate_record` reads, from the importer's own parse of a record."""

    def __init__(self, attrs: dict[str, Any]) -> None:
        self.__dict__.update(attrs, accept_collisions=False)


VALIDATION_SITES = [
    site(),
    site(template="Invalid value %(value)r for %s, expected 100%%", notation=N.PYTHON_PERCENT),
    site(template="bad {name!r} in {0}: {{literal}}", notation=N.PYTHON_FORMAT),
    site(template="cannot watch %q: %w (and [x])", notation=N.PRINTF, error_code="Unavailable"),
    site(template="Topic {} not found (.*) in $ref", notation=N.SLF4J, severity=Severity.WARNING),
    site(template="Unknown topic $topic in ${req.name}", notation=N.SCALA),
    site(template="Cannot read {0} at {1,number}", notation=N.JAVA_MESSAGE_FORMAT),
    site(template="plain text with ^anchors$ and a {} hole", notation=N.PLAIN, http_status=404),
]


@pytest.mark.parametrize("s", VALIDATION_SITES, ids=lambda s: s.notation.value)
def test_records_pass_the_importer_and_the_admins_validation(s: Site) -> None:
    made = record(s)
    attrs, version = parse_record({"record": made, "datasetVersion": "learned"})
    assert version == "learned"
    checked = validate_record(Draft(attrs), stored=None, colliding_with=lambda _p: [])
    assert checked.errors == {}
    assert message_is_matched(made["messagePattern"], made["errorMessage"])


@pytest.mark.parametrize(
    "s",
    [
        site(template="expected 100%% sure of %s", notation=N.PYTHON_PERCENT),
        site(template="Can''t read {0} at {1,number}", notation=N.JAVA_MESSAGE_FORMAT),
    ],
    ids=lambda s: s.notation.value,
)
def test_records_the_admins_rendering_misreads_still_import(s: Site) -> None:
    """The admin's self-match check renders every notation alike (``% s`` read as a
    placeholder, ``''`` kept doubled), so it would refuse these as new records typed in
    by hand; the importer's path, which learned records take, checks the schema and the
    engine, and both accept them."""
    made = record(s)
    attrs, _version = parse_record({"record": made, "datasetVersion": "learned"})
    assert admit_pattern(attrs["message_pattern"]).ok
    assert re.search(made["messagePattern"], s.template.replace("%%", "%").replace("''", "'"))


def test_a_hostile_file_still_gives_a_record_that_validates() -> None:
    """A NUL byte (which PostgreSQL cannot store) in the message and in the window, and a
    class name past the schema's length: the record is still made, and still valid."""
    hostile = site(
        template="bad\x00 value {} in the request",
        error_class="Result<" * 60 + "Error",
        error_code="E" * 300,
        line=3,
    )
    lines = ["fn f() {", '  let x = "\x00";', '  bail!("bad\x00 value {} in the request", x)', "}"]
    made = record(hostile, lines=lines)
    attrs, _version = parse_record({"record": made, "datasetVersion": "learned"})
    assert validate_record(Draft(attrs), stored=None, colliding_with=lambda _p: []).errors == {}
    assert made["errorMessage"] == "bad\ufffd value {} in the request"
    assert "\x00" not in made["sourceCode"]
    assert len(made["errorClass"]) == len(made["errorCode"]) == 200
    # the stored record and the site it came from keep one key
    path = hostile.path
    assert site_key("o/r", path, made["errorMessage"]) == site_key("o/r", path, hostile.template)


def test_a_line_past_the_end_of_the_file_keeps_the_window_inside_it() -> None:
    made = record(site(line=500, end_line=500))
    assert (made["lineNumber"], made["sourceCodeStart"], made["sourceCodeEnd"]) == (500, 82, 100)


def test_record_has_the_seeds_keys_in_order_and_empty_analysis() -> None:
    seed = json.loads(SEED.read_text().splitlines()[0])["record"]
    made = record(site())
    # the release keys are optional: a record learned from one revision has none
    assert list(made) == list(seed) == [f.key for f in FIELDS if not f.optional]
    for key in ("documentation", "triggerScenarios", "exampleFix", "handlingStrategy"):
        assert made[key] is None
    assert made["solutions"] == made["preventionTips"] == []
    assert made["analyzedAt"] == made["contentChangedAt"] == "2026-09-11T21:06:21.487Z"
    assert made["schemaVersion"] == 2
    assert made["analyzedSha"] == REVISION
    assert re.fullmatch(r"[0-9a-f]{16}", made["id"])
    assert 3 <= len(made["tags"]) <= 5
    assert made["tags"][0] == "barrier"  # the innermost telling directory
    assert made["backgroundTag"] == "state-error"  # "epoch"


def test_an_error_code_makes_the_error_type_error_code() -> None:
    made = record(site(error_code="InvalidArgument", error_type=ErrorType.ERROR_RETURN))
    assert (made["errorCode"], made["errorType"]) == ("InvalidArgument", "error_code")


def test_id_survives_line_moves_and_edits_elsewhere() -> None:
    first = record(site(line=40))
    moved_lines = ["// a new header", "", *FILE]
    moved = record(site(line=42, end_line=44), lines=moved_lines)
    assert moved["id"] == first["id"]
    assert moved["lineNumber"] == 42
    reflowed = record(site(template="no active streaming workers for {}\n    (epoch {:?})"))
    assert reflowed["id"] == first["id"]  # whitespace of a literal split over lines
    for change in (
        {"template": "no active streaming workers for {} (epoch {})"},
        {"function": "impl GlobalBarrierWorker::recover"},
        {"path": "src/meta/src/barrier/other.rs"},
    ):
        assert record(site(**change))["id"] != first["id"], change
    assert to_record(site(), repo="o/fork", revision="x", lines=FILE, url=None)["id"] != first["id"]


def test_the_same_message_twice_in_a_function_gives_two_ids() -> None:
    sites = [site(line=10), site(line=30), site(line=50, function="other")]
    made = to_records(sites, repo="o/r", revision=REVISION, lines=FILE, url=None, at=AT)
    assert len({r["id"] for r in made}) == 3
    assert made[0]["id"] == record(site(line=99))["id"]  # the first keeps the plain id


@pytest.mark.parametrize(
    ("line", "start", "end"),
    [
        (1, 1, 19),
        (18, 1, 36),
        (19, 1, 37),
        (20, 2, 38),
        (50, 32, 68),
        (83, 65, 100),
        (100, 82, 100),
    ],
)
def test_snippet_window_is_clipped_to_the_file(line: int, start: int, end: int) -> None:
    made = record(site(line=line, end_line=line))
    assert (made["sourceCodeStart"], made["sourceCodeEnd"]) == (start, end)
    assert made["sourceCode"] == "\n".join(FILE[start - 1 : end])
    assert (
        made["githubUrl"] == f"https://github.com/o/r/blob/{REVISION}/{site().path}#L{start}-L{end}"
    )


def test_lines_with_their_endings_give_the_same_window_as_split() -> None:
    text = "".join(f"line {n}\n" for n in range(1, 31))
    split = record(site(line=25), lines=text.split("\n"))
    kept = record(site(line=25), lines=text.splitlines(keepends=True))
    assert (
        split["sourceCodeEnd"] == kept["sourceCodeEnd"] == 31
    )  # the empty line after the last break
    assert kept["sourceCode"] == split["sourceCode"] == "\n".join(text.split("\n")[6:31])


def test_github_url_is_empty_without_a_web_url_and_clean_with_one() -> None:
    assert record(site(), url=None)["githubUrl"] == ""
    url = record(site(line=50), url="https://github.com/o/r.git/")["githubUrl"]
    assert url == f"https://github.com/o/r/blob/{REVISION}/{site().path}#L32-L68"


@pytest.mark.parametrize(
    ("template", "notation", "ok"),
    [
        ("{}", N.RUST, False),
        ("%s: %s", N.PYTHON_PERCENT, False),
        ("bad {} {}", N.RUST, False),  # 3 + 1 + 1 literal characters
        ("bad value {}", N.RUST, True),
        ("{{}}{{}}{{}}", N.RUST, False),  # 6 literal braces
        ("%%%%%%%%", N.PRINTF, False),  # 4 literal percent signs
        ("%%%%%%%%", N.PLAIN, True),
    ],
)
def test_too_little_literal_text_is_not_a_record(
    template: str, notation: Notation, ok: bool
) -> None:
    s = site(template=template, notation=notation)
    assert admissible(s) is ok
    if ok:
        assert record(s)["errorMessage"] == template
    else:
        with pytest.raises(NotAdmissible, match=str(MIN_LITERAL)):
            record(s)
        assert to_records([s], repo="o/r", revision="x", lines=FILE, url=None) == []


def test_tags_come_from_path_message_and_kind() -> None:
    s = site(
        path="clients/src/main/java/org/apache/kafka/common/utils/Utils.java",
        template="Topic {} not found in metadata",
        notation=N.SLF4J,
    )
    made = tags(s)
    assert made[0] == "clients"  # utils, common, kafka, apache, org, java, main, src say nothing
    assert "topic" in made
    assert "not-found" in made
    assert record(s)["backgroundTag"] == "record-not-found"
    panic = site(template="worker lost its bookkeeping here", error_type=ErrorType.PANIC)
    assert record(panic)["backgroundTag"] == "internal-invariant"


def test_site_key_is_line_free_and_whitespace_normalised() -> None:
    key = site_key("o/r", "a/b.py", "bad value  %s\n   for %s")
    assert key == site_key("o/r", "a/b.py", " bad value %s for %s ")
    assert key != site_key("o/r", "a/b.py", "bad value %s for %r")
    assert key != site_key("o/r", "a/c.py", "bad value %s for %s")
    assert key != site_key("o/s", "a/b.py", "bad value %s for %s")
    assert normalise_template(" a\tb\n c ") == "a b c"


def test_sites_of_one_key_pair_with_records_by_rank_of_line() -> None:
    # learned at lines 12, 90, 40; the dataset had 10, 38: the third site is new
    assert pair_in_order([12, 90, 40], [38, 10]) == [(0, 1), (2, 0), (1, None)]
    assert pair_in_order([5], [7, 3]) == [(0, 1), (None, 0)]


@pytest.mark.slow
def test_every_dataset_pattern_is_reproduced_by_some_notation() -> None:
    """All but the records whose literal ``{}`` reads like a concatenation hole."""
    notations = {
        "rs": (N.RUST, N.PLAIN),
        "go": (N.PRINTF, N.PLAIN),
        "java": (N.SLF4J, N.PRINTF, N.PLAIN),
        "py": (N.PYTHON_PERCENT, N.PYTHON_FORMAT, N.PLAIN),
    }
    missed: list[str] = []
    slugs = 0
    keys: Counter[str] = Counter()
    with dataset_path(ALL_RECORDS).open(encoding="utf-8") as lines:
        for line in lines:
            r = json.loads(line)["record"]
            keys[site_key(r["repo"], r["filePath"], r["errorMessage"])] += 1
            candidates = notations[r["filePath"].rsplit(".", 1)[1]]
            hit = [
                n
                for n in candidates
                if message_pattern(r["errorMessage"], n) == r["messagePattern"]
            ]
            if not hit:
                missed.append(r["errorMessage"])
                continue
            slugs += slug(r["errorMessage"], hit[0]) == r["slug"]
            literal = replace(site(), template=r["errorMessage"], notation=hit[0])
            assert admissible(literal), r["id"]
    assert len(missed) <= 4, missed
    assert all("{}" in m for m in missed)
    assert slugs == sum(keys.values()) - len(missed)


def test_a_release_without_a_repository_links_through_its_template() -> None:
    """``link`` (a release's files on the index's own browser) fills in the path and the
    snippet's lines; a repository's web address, when there is one, wins."""
    template = "https://inspector.test/pkg/1.0/pkg-1.0/{path}#line.{line}"
    made = to_record(site(line=50), repo="o/r", revision="1.0", lines=FILE, url=None, link=template)
    assert made["githubUrl"] == f"https://inspector.test/pkg/1.0/pkg-1.0/{made['filePath']}#line.50"
    both = to_record(
        site(line=50),
        repo="o/r",
        revision="1.0",
        lines=FILE,
        url="https://github.com/o/r",
        link=template,
    )
    assert both["githubUrl"].startswith("https://github.com/o/r/blob/1.0/")
