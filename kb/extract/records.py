"""A `Site` as a record of the dataset's schema, made the way the dataset's own were.

Every field follows the rules the dataset's records were made by, so that a site learned
from a file the dataset covers yields the same ``messagePattern`` and ``slug`` as the
dataset's record of it: the message's literal text with only regex metacharacters escaped,
each placeholder of the template's notation a lazy group ``(.+?)``, and the literal words
lowercased and joined for the slug. What differs on purpose is the ``id``: the dataset's
hashes the line, which would make every learned record new after a line moved; here it is
derived from the repository, the file, the enclosing function and the template (see
`kb.extract.identity` for how a learned site finds a dataset record whose id was made the
other way).

A template with fewer than `MIN_LITERAL` characters of literal text (``"{}"``,
``"%s: %s"``) says nothing a paste could be matched on: `admissible` says no, and
`to_record` raises `NotAdmissible` for it, so a caller either filters first or catches.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from functools import lru_cache
from typing import Any

from kb.extract.identity import REPLACEMENT, normalise_template
from kb.extract.sites import MIN_LITERAL, ErrorType, Notation, Site

__all__ = [
    "CONTEXT_LINES",
    "MIN_LITERAL",
    "NotAdmissible",
    "admissible",
    "background_tag",
    "literal_text",
    "message_pattern",
    "record_id",
    "slug",
    "tags",
    "to_record",
    "to_records",
]

#: Lines of source on each side of the raising line in ``sourceCode``.
CONTEXT_LINES = 18
SCHEMA_VERSION = 2
SLUG_LENGTH = 43
NAME_LENGTH = 200  # the schema's errorClass and errorCode
GROUP = "(.+?)"

# The metacharacters the dataset's patterns escape (and nothing else: spaces, quotes,
# ``-``, ``#`` and ``%`` stay as written).
_META = re.compile(r"([.^$*+?{}\[\]\\|()])")

# Placeholder grammars, one token kind each: a group, or a literal written some other way
# in the template (``{{`` for a brace, ``%%`` for a percent sign).
_BRACE = r"\{(?:[^{}]|\{[^{}]*\}){0,300}\}"  # {} {name} {:?} {0} {expr} (one nesting)
_HOLE = r"\{\}"  # a non-literal part of a concatenation, in every notation
_PERCENT_NAMED = r"%\([A-Za-z_][A-Za-z0-9_]*\)[-#0 +]*\d*(?:\.\d+)?[a-zA-Z]"
_PRINTF_VERB = r"%(?:\[\d+\]|\d+\$)?[-#0 +]*\d*(?:\.\d+)?[sdifvqwrxXeEgGcpbouTt]"
_SCALA = r"\$\{[^{}]{0,300}\}|\$[A-Za-z_][A-Za-z0-9_]*"
_MESSAGE_FORMAT = r"\{\d+(?:,[^{}]{0,100})?\}"

# Per notation: (token regex, literal text of the escape tokens).
_GRAMMARS: dict[Notation, tuple[re.Pattern[str], dict[str, str]]] = {
    Notation.RUST: (re.compile(rf"\{{\{{|\}}\}}|{_BRACE}"), {"{{": "{", "}}": "}"}),
    # f-strings are often %-formatted afterwards: their %s are placeholders too, as in
    # the dataset's records of such messages.
    Notation.PYTHON_FORMAT: (
        re.compile(rf"\{{\{{|\}}\}}|{_BRACE}|{_PERCENT_NAMED}|{_PRINTF_VERB}"),
        {"{{": "{", "}}": "}"},
    ),
    Notation.PYTHON_PERCENT: (
        re.compile(rf"%%|{_PERCENT_NAMED}|{_PRINTF_VERB}|{_HOLE}"),
        {"%%": "%"},
    ),
    Notation.PRINTF: (re.compile(rf"%%|%n|{_PRINTF_VERB}|{_HOLE}"), {"%%": "%", "%n": "\n"}),
    Notation.SLF4J: (re.compile(_HOLE), {}),
    Notation.SCALA: (re.compile(rf"\$\$|{_SCALA}|{_HOLE}"), {"$$": "$"}),
    Notation.JAVA_MESSAGE_FORMAT: (re.compile(rf"''|{_MESSAGE_FORMAT}|{_HOLE}"), {"''": "'"}),
    Notation.PLAIN: (re.compile(_HOLE), {}),
}


class NotAdmissible(ValueError):
    """The template has too little literal text to be a record (see `MIN_LITERAL`)."""


@lru_cache(maxsize=1024)
def _pieces(template: str, notation: Notation) -> tuple[tuple[str, bool], ...]:
    """The template as (text, is_placeholder) pieces; escape tokens become their literal.
    Cached: a record reads them five times (pattern, slug, admission, tags, background)."""
    grammar, escapes = _GRAMMARS[Notation(notation)]
    out: list[tuple[str, bool]] = []
    at = 0
    for match in grammar.finditer(template):
        if match.start() > at:
            out.append((template[at : match.start()], False))
        token = match.group(0)
        literal = escapes.get(token)
        out.append((token, True) if literal is None else (literal, False))
        at = match.end()
    if at < len(template):
        out.append((template[at:], False))
    return tuple(out)


def message_pattern(template: str, notation: Notation) -> str:
    """The dataset's ``messagePattern`` of ``template``: literal text with regex
    metacharacters escaped, each placeholder of ``notation`` a lazy group."""
    return "".join(
        GROUP if placeholder else _META.sub(r"\\\1", text)
        for text, placeholder in _pieces(template, notation)
    )


def literal_text(template: str, notation: Notation) -> str:
    """The text the message prints whatever its values are (placeholders removed)."""
    return "".join(text for text, placeholder in _pieces(template, notation) if not placeholder)


def admissible(site: Site) -> bool:
    """Does ``site`` carry enough literal text (`MIN_LITERAL`) to become a record?"""
    return len(literal_text(site.template, site.notation).strip()) >= MIN_LITERAL


def slug(template: str, notation: Notation) -> str:
    """The dataset's slug: the literal words, lowercased, joined with ``-``, cut to
    `SLUG_LENGTH` characters."""
    words = re.findall(r"[a-z0-9]+", literal_text(template, notation).lower())
    return "-".join(words)[:SLUG_LENGTH].strip("-")


def record_id(repo: str, path: str, function: str, template: str, occurrence: int = 0) -> str:
    """A stable id: the same site keeps it when lines move or other code changes.

    ``occurrence`` tells apart the same message raised twice in one function (the
    dataset keeps one record per site); 0 for the first, so most ids need no count.
    """
    parts = [repo, path, function, normalise_template(template)]
    if occurrence:
        parts.append(str(occurrence))
    return hashlib.sha256("\x00".join(parts).encode("utf-8")).hexdigest()[:16]


# --- tags ------------------------------------------------------------------------------
# Directory names that say nothing about what a file does: the tag from the path is the
# innermost directory not among them (the file's name when all are).
_PATH_NOISE_WORDS = (
    "src main java scala python go rust lib libs pkg org com net io apache kafka "
    "base util utils core common internal internals impl runtime server client mod init"
)
_PATH_NOISE = frozenset(_PATH_NOISE_WORDS.split())
# Words too common in messages to describe one.
_STOP_WORDS_TEXT = """
    a an the and or but not no nor of to in on at by for from with without into onto
    as is are was were be been being has have had do does did can cannot could should would
    will shall may might must this that these those it its than then there here which who
    what when where while if else so such only also any all some each every other same
    more most less very too just yet still again already use used using get got set add
    make made new old one two via per see try tried call called unable failed fail
    failure error errors err exception expected got found given value values while after
    before during your you we our they their them he she his her i my me us"""
_STOP_WORDS = frozenset(_STOP_WORDS_TEXT.split())

# Keyword rules over the message (and the class), first hit wins: the dataset's
# ``backgroundTag`` kinds, each with the tag it also adds to ``tags``.
_BACKGROUNDS: tuple[tuple[str, str | None, re.Pattern[str]], ...] = tuple(
    (background, tag, re.compile(rx))  # over lowercased text: faster than IGNORECASE
    for background, tag, rx in (
        ("timeout", "timeout", r"time[sd]?[ -]?out|deadline|expired"),
        ("cancelled", "shutdown", r"cancel|shut ?down|interrupted|abort|closed|closing"),
        (
            "permission-denied",
            "permission",
            r"permission|denied|unauthori[sz]ed|forbidden|not allowed|authenticat|"
            r"authoriz|access",
        ),
        ("already-exists", "already-exists", r"already (?:exists?|registered|defined)|duplicat"),
        (
            "record-not-found",
            "not-found",
            r"not (?:be )?found|does ?n[o']t exist|no such|unknown|missing|cannot find|"
            r"could not find|couldn't find|not registered|not exist",
        ),
        (
            "unsupported",
            "unsupported",
            r"not (?:yet )?supported|unsupported|not implemented|unimplemented|deprecated|"
            r"no longer",
        ),
        (
            "resource-exhausted",
            "limit",
            r"too (?:many|large|big|long)|exceed|overflow|out of memory|quota|limit|"
            r"exhausted|capacity",
        ),
        (
            "parse-error",
            "parse",
            r"pars(?:e|ing)|serializ|deserializ|decod|encod|malformed|syntax|json|"
            r"unmarshal|marshal",
        ),
        (
            "config-error",
            "config",
            r"config|setting|option|propert(?:y|ies)|environment variable",
        ),
        (
            "io-failure",
            "io",
            r"\bi/?o\b|\bread\b|\bwrite\b|reading|writing|\bfile\b|directory|socket|"
            r"connect|network|disk|flush",
        ),
        (
            "internal-invariant",
            "invariant",
            r"unreachable|should never|never happen|invariant|assert|\bbug\b|impossible|"
            r"should (?:have|exist|always|store|only)|always|inconsistent|must have been",
        ),
        (
            "invalid-argument",
            "invalid-input",
            r"invalid|illegal|must (?:be|not|have)|should (?:be|not)|expected|empty|negative|"
            r"bad |wrong|cannot be|can't be|mismatch|out of range|requires?",
        ),
        (
            "state-error",
            "state",
            r"\bstate\b|already|not (?:yet )?(?:started|running|initiali[sz]ed|ready|open)|"
            r"epoch|in progress",
        ),
    )
)
_DEFAULT_BACKGROUND = "runtime-failure"


def background_tag(site: Site) -> str:
    """The dataset's ``backgroundTag`` kind of a site, by keyword rules over its message
    and class (``runtime-failure`` when none applies)."""
    text = f"{literal_text(site.template, site.notation)} {site.error_class or ''}".lower()
    for background, _tag, rx in _BACKGROUNDS:
        if rx.search(text):
            return background
    # A panic with no telling word is a broken assumption of the code's own.
    return "internal-invariant" if site.error_type is ErrorType.PANIC else _DEFAULT_BACKGROUND


def _path_tag(path: str) -> str:
    parts = path.split("/")
    for directory in reversed(parts[:-1]):
        name = directory.strip("_").lower().replace("_", "-")
        if name and name not in _PATH_NOISE and not name.startswith("."):
            return name
    stem = parts[-1].rsplit(".", 1)[0]
    return stem.strip("_").lower().replace("_", "-") or "source"


def tags(site: Site, background: str | None = None) -> list[str]:
    """3 or 4 tags, as most of the dataset's records have: the innermost telling directory
    of the path, the first words of the message that are not common words, and the tag of
    the background kind."""
    background = background or background_tag(site)
    kind_tag = next((tag for name, tag, _ in _BACKGROUNDS if name == background), None)
    out = [_path_tag(site.path)]
    words = re.findall(r"[a-z][a-z0-9]+", literal_text(site.template, site.notation).lower())
    limit = 3
    for word in words:
        if len(out) >= limit:
            break
        if len(word) >= 3 and word not in _STOP_WORDS and word not in out and word != kind_tag:
            out.append(word)
    if kind_tag and kind_tag not in out:
        out.append(kind_tag)
    for filler in (site.error_type.value.replace("_", "-"), site.severity.value):
        if len(out) >= 3:
            break
        if filler not in out:
            out.append(filler)
    return out


# --- the record --------------------------------------------------------------------------
def _timestamp(at: datetime | None) -> str:
    moment = (at or datetime.now(UTC)).astimezone(UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _text(value: str) -> str:
    """Text a record can hold: a NUL (which PostgreSQL cannot store) as U+FFFD. A source
    is untrusted, and a NUL byte in a literal or a line must not cost its record."""
    return value.replace("\x00", REPLACEMENT) if "\x00" in value else value


def _clipped(value: str | None) -> str | None:
    """A class or code name within the schema's length (an odd generic type can be long)."""
    if value is None:
        return None
    value = _text(value)
    return value if len(value) <= NAME_LENGTH else value[: NAME_LENGTH - 1] + "…"


def _web_url(url: str | None) -> str:
    if not url:
        return ""
    url = url.rstrip("/")
    return url.removesuffix(".git")


def _link(web: str, link: str | None, revision: str, path: str, lines: tuple[int, int, int]) -> str:
    """The site's link: a repository's page at the revision (the snippet's window, as the
    dataset links), else ``link``'s template filled in, else none."""
    line, start, end = lines
    if web:
        return f"{web}/blob/{revision}/{path}#L{start}-L{end}"
    if link:
        filled = {"{path}": path, "{line}": str(line), "{start}": str(start), "{end}": str(end)}
        return re.sub(r"\{(?:path|line|start|end)\}", lambda m: filled[m.group()], link)
    return ""


def to_record(
    site: Site,
    *,
    repo: str,
    revision: str,
    lines: Sequence[str],
    url: str | None,
    link: str | None = None,
    at: datetime | None = None,
    occurrence: int = 0,
) -> dict[str, Any]:
    """A record of the dataset's schema (the keys and order of ``fixtures/seed-record.jsonl``)
    for ``site``.

    ``lines`` are the file's lines, ``text.split("\\n")`` (or with their endings) for the snippet
    window, ``lineNumber`` - `CONTEXT_LINES` .. ``lineNumber`` + `CONTEXT_LINES` clipped to
    the file; ``url`` the repository's web address (``https://github.com/owner/name``), or
    ``None`` for a source with none; ``link`` then, for a source that is no repository (a
    release's archive), where its files can be read: a template with ``{path}``,
    ``{line}``, ``{start}`` and ``{end}`` (the snippet's window); with neither,
    ``githubUrl`` is empty. ``at`` is the time of the learn (now when not given);
    ``occurrence`` as in `record_id`. Analysis fields are empty, as in the dataset.
    Raises `NotAdmissible` for a site `admissible` refuses.
    """
    if not admissible(site):
        raise NotAdmissible(
            f"{site.path}:{site.line}: fewer than {MIN_LITERAL} characters of literal text"
        )
    if lines and lines[-1].endswith("\n"):
        # Lines with their endings: the file's last line break starts one more, empty,
        # line, as in ``text.split("\n")`` (which is what the dataset's windows count).
        lines = [*lines, ""]
    count = max(len(lines), 1)
    line = min(max(site.line, 1), count)
    start = max(1, line - CONTEXT_LINES)
    end = min(count, line + CONTEXT_LINES)
    snippet = _text("\n".join(text.removesuffix("\n") for text in lines[start - 1 : end]))
    web = _web_url(url)
    background = background_tag(site)
    stamp = _timestamp(at)
    error_type = ErrorType.ERROR_CODE if site.error_code else site.error_type
    template = _text(site.template)
    return {
        "id": record_id(repo, site.path, site.function, site.template, occurrence),
        "repo": repo,
        "slug": slug(site.template, site.notation),
        "errorCode": _clipped(site.error_code),
        "errorMessage": template,
        "messagePattern": message_pattern(template, site.notation),
        "errorType": error_type.value,
        "errorClass": _clipped(site.error_class),
        "httpStatus": site.http_status,
        "severity": site.severity.value,
        "filePath": site.path,
        "lineNumber": site.line,
        "sourceCode": snippet,
        "sourceCodeStart": start,
        "sourceCodeEnd": end,
        "githubUrl": _link(web, link, revision, site.path, (site.line, start, end)),
        "documentation": None,
        "triggerScenarios": None,
        "commonSituations": None,
        "solutions": [],
        "exampleFix": None,
        "handlingStrategy": None,
        "validationCode": None,
        "typeGuard": None,
        "tryCatchPattern": None,
        "preventionTips": [],
        "tags": tags(site, background),
        "backgroundTag": background,
        "analyzedSha": revision,
        "analyzedAt": stamp,
        "contentChangedAt": stamp,
        "schemaVersion": SCHEMA_VERSION,
    }


def to_records(
    sites: Iterable[Site],
    *,
    repo: str,
    revision: str,
    lines: Sequence[str],
    url: str | None,
    link: str | None = None,
    at: datetime | None = None,
) -> list[dict[str, Any]]:
    """The records of one file's admissible sites, in order; the same message raised
    twice in one function gets two records with two ids (see `record_id`)."""
    seen: Counter[tuple[str, str]] = Counter()
    out = []
    for site in sites:
        if not admissible(site):
            continue
        key = (site.function, normalise_template(site.template))
        out.append(
            to_record(
                site,
                repo=repo,
                revision=revision,
                lines=lines,
                url=url,
                link=link,
                at=at,
                occurrence=seen[key],
            )
        )
        seen[key] += 1
    return out
