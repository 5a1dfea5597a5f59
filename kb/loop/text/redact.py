"""Replace secrets and personal data in pasted text with placeholders, before anything of a
paste is stored or shown back as "what will be sent".

Why: a report of an unknown error keeps a few sample lines for curators. People paste logs
with API keys, database passwords, session cookies, emails and addresses in them; the
product promises that none of that is kept (docs/reliability.md#r27-paste-privacy). The
user sees the redacted text before sending, so redaction must also leave the error's own
words readable: class names, `Connection refused`, `column "x" does not exist`.

What: `redact(text)` applies the rules of `_redact_rules` in a fixed order and returns the
text and how many of each placeholder it wrote, so a preview can say "3 secrets replaced".
The placeholders are listed, with what each stands for, in `PLACEHOLDERS`. The order:
private key blocks first, then encodings (a percent-encoded run is decoded and redacted as
text, so what it hides is found by the same rules), URL credentials and webhook paths,
provider tokens, base64 runs (decoded; replaced when the text inside holds a secret), then
the named values (headers, cookies, command-line passwords, ``name=value``), the tail of a
value that a line break cut, and last the personal data (emails before hosts, so an address
goes whole). A secret is taken whole or not at all: a value runs on over the characters
passwords hold ("Sn0wd0g&9y") unless what follows is the next ``name=``.

Properties the tests hold it to: no secret of the shape table survives, nor any piece of
eight characters of a made-up secret under any key shape in a real log line; message words
of real errors do; idempotent (already-placed placeholders are never replaced again); never
raises on a `str`; the output is at most a small constant times the input; linear time
(bounded regexes, see `_redact_rules`; a decoded value is read again at most `_MAX_DEPTH`
deep, and is shorter than its encoding). Not attempted: free-form secrets with no shape or
name beside them (a bare random word is indistinguishable from an identifier; base64 of
one decodes to bytes that say nothing), the tail of a wrapped secret that reads as a word
(plain letters at the start of the next line), and names of people in prose.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from . import _redact_rules as r
from ._redact_rules import PLACEHOLDERS

__all__ = ["PLACEHOLDERS", "Redacted", "redact"]

#: A bound on growth: the shortest input a rule replaces is never shorter than a third of
#: what it writes (``p=x`` -> ``p=<password>``), plus slack for the tests' tiny inputs.
GROWTH_FACTOR = 3

# Bare values after "password:" that are the next word of a message, not a password
# ("password: must be at least 8 characters").
_MESSAGE_WORDS = frozenset(
    (
        *("must", "is", "are", "was", "not", "cannot", "can't", "required", "missing"),
        *("invalid", "incorrect", "expired", "empty", "none", "null", "true", "false"),
        *("too", "should", "does", "did", "failed", "mismatch", "authentication"),
    )
)
_WEAK_COLON_NAMES = frozenset(("pass",))


@dataclass(frozen=True, slots=True)
class Redacted:
    """The redacted text and how many of each placeholder were written."""

    text: str
    counts: dict[str, int] = field(default_factory=dict)

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    def summary(self) -> str:
        """For a preview: "2 <secret>, 1 <email> replaced" (or "nothing replaced")."""
        if not self.counts:
            return "nothing replaced"
        parts = [f"{n} {p}" for p, n in sorted(self.counts.items(), key=lambda kv: (-kv[1], kv[0]))]
        return ", ".join(parts) + " replaced"


Replace = Callable[[re.Match[str], Counter[str], int], str]
#: (a substring the text must contain for the rule to run -- a C-speed skip -- or None,
#:  the regex, the replacement, and where to read on when the replacement keeps a match:
#:  the end of that group instead of the end of the match)
Rule = tuple[str | None, re.Pattern[str], Replace, str | None]

#: How deep an encoded value is decoded (base64 of a URL-encoded "key=value", ...).
_MAX_DEPTH = 2


def _put(counts: Counter[str], placeholder: str) -> str:
    counts[placeholder] += 1
    return placeholder


def _whole(placeholder: str) -> Replace:
    return lambda m, c, d: _put(c, placeholder)


def _url_credentials(m: re.Match[str], c: Counter[str], d: int) -> str:
    user = m["user"]
    shown = _put(c, r.USER) if user and not r.is_placeholder(user) else user
    pw = m["pw"] if r.is_placeholder(m["pw"]) else _put(c, r.PASSWORD)
    return f"{m['scheme']}{shown}:{pw}@"


def _url_token_user(m: re.Match[str], c: Counter[str], d: int) -> str:
    if not r.token_shaped(m["tok"]) or r.is_placeholder(m["tok"]):
        return m[0]
    return f"{m['scheme']}{_put(c, r.SECRET)}@"


def _webhook(m: re.Match[str], c: Counter[str], d: int) -> str:
    return f"{m['keep']}{_put(c, r.SECRET)}"


def _aws_secret(m: re.Match[str], c: Counter[str], d: int) -> str:
    return _put(c, r.SECRET) if r.looks_like_aws_secret(m[0]) else m[0]


def _decoded(text: str | None, d: int) -> Redacted | None:
    """``text`` (a decoded value) redacted, when it holds something to redact."""
    if text is None or d >= _MAX_DEPTH:
        return None
    inner = _redact(text, d + 1)
    return inner if inner.counts else None


def _base64(m: re.Match[str], c: Counter[str], d: int) -> str:
    return m[0] if _decoded(r.decode_base64(m[0]), d) is None else _put(c, r.SECRET)


def _percent(m: re.Match[str], c: Counter[str], d: int) -> str:
    """Shown decoded, with the placeholders: the URL stays readable around the secret."""
    inner = _decoded(r.decode_percent(m[0]), d)
    if inner is None:
        return m[0]
    c.update(inner.counts)
    return inner.text


def _auth_header(m: re.Match[str], c: Counter[str], d: int) -> str:
    value = m["value"]
    if r.is_placeholder(value):
        return m[0]
    scheme = f"{m['scheme']} " if m["scheme"] else ""
    placeholder = r.SECRET if (m["scheme"] or "").lower() == "basic" else r.TOKEN
    return f"{m['name']}{m['sep']}{scheme}{_put(c, placeholder)}"


def _bearer(m: re.Match[str], c: Counter[str], d: int) -> str:
    if not r.looks_like_credential(m["value"], m["scheme"]):
        return m[0]
    placeholder = r.SECRET if m["scheme"].lower() == "basic" else r.TOKEN
    return f"{m['scheme']} {_put(c, placeholder)}"


def _cookie(m: re.Match[str], c: Counter[str], d: int) -> str:
    if r.is_placeholder(m["value"].strip()):
        return m[0]
    return f"{m['name']}{m['sep']}{_put(c, r.SECRET)}"


def _cli(m: re.Match[str], c: Counter[str], d: int) -> str:
    quoted = m.groupdict().get("q")
    value = m["qvalue"] if quoted else m["value"]
    if r.is_placeholder(value) or r.is_plain_value(value):
        return m[0]
    flag = m["head"].rstrip(" \t").lower()
    if flag.endswith(("-p", "pass", "passwd", "password")):
        placeholder = r.PASSWORD
    else:
        placeholder = r.TOKEN if flag.endswith("token") else r.SECRET
    shown = _put(c, placeholder)
    return f"{m['head']}{quoted}{shown}{quoted}" if quoted else f"{m['head']}{shown}"


def _key_value(m: re.Match[str], c: Counter[str], d: int) -> str:
    quoted = m["q"] is not None
    value = m["qvalue"] if quoted else m["value"]
    if not value or r.is_placeholder(value) or r.is_plain_value(value):
        return m[0]
    if m["pw"]:
        placeholder = r.PASSWORD
    elif m["sec"]:
        placeholder = r.SECRET
    elif m["tok"]:
        placeholder = r.TOKEN
    elif m["nid"]:
        placeholder = r.NATIONAL_ID
    elif m["ph"]:
        placeholder = r.PHONE
    else:
        placeholder = r.USER
    if ":" in m["sep"] and not _colon_value_is_secret(m, value, quoted or bool(m["oq"])):
        return m[0]
    if (m["nid"] or m["ph"]) and (len(value) < 4 or not any(ch.isdigit() for ch in value)):
        return m[0]
    shown = _put(c, placeholder)
    if quoted:
        shown = f"{m['q']}{shown}{m['q']}"
    elif m["oq"]:
        shown = f"{m['oq']}{shown}"
    return f"{m['name']}{m['sep']}{shown}"


def _colon_value_is_secret(m: re.Match[str], value: str, quoted: bool) -> bool:
    """``name: value`` is as often a message ("Unexpected token: ')'") as config
    ("password: hunter2"). A quoted name (JSON, a Python dict) is config, and so is a
    quoted value after a password name (YAML, a Rust or Go struct); otherwise only strong
    names take any value, and the rest need a token shape."""
    if m["sep"].lstrip("\\")[:1] in ('"', "'"):
        return True
    if m["usr"]:
        return False
    keyword = (m["pw"] or "").lower()
    if keyword and keyword not in _WEAK_COLON_NAMES:
        return value.lower().rstrip(".") not in _MESSAGE_WORDS
    if quoted and (m["sec"] or m["tok"]) and not any(ch.isspace() for ch in value):
        return (len(value) >= 6 and r.token_shaped(value)) or r.secretish(value)
    return r.secretish(value)


def _card(m: re.Match[str], c: Counter[str], d: int) -> str:
    return _put(c, r.CARD) if r.is_card(m[0]) else m[0]


def _iban(m: re.Match[str], c: Counter[str], d: int) -> str:
    return _put(c, r.IBAN) if r.is_iban(m[0]) else m[0]


def _national_id(m: re.Match[str], c: Counter[str], d: int) -> str:
    return _put(c, r.NATIONAL_ID) if r.is_national_id(m[0]) else m[0]


def _ipv4(m: re.Match[str], c: Counter[str], d: int) -> str:
    return _put(c, r.IP) if r.ipv4_identifies_a_machine(m[0]) else m[0]


def _ipv6(m: re.Match[str], c: Counter[str], d: int) -> str:
    addr = r.ipv6_to_redact(m[0])
    if addr is None:
        return m[0]
    return _put(c, r.IP) + m[0][len(addr) :]


def _host(m: re.Match[str], c: Counter[str], d: int) -> str:
    return m[0] if r.is_public_host(m[0]) else _put(c, r.HOST)


def _home(m: re.Match[str], c: Counter[str], d: int) -> str:
    if not r.is_personal_home(m["name"]):
        return m[0]
    return f"{m['root']}{_put(c, r.USER)}"


def _tilde(m: re.Match[str], c: Counter[str], d: int) -> str:
    return f"~{_put(c, r.USER)}" if r.is_personal_home(m["name"]) else m[0]


def _continuation(m: re.Match[str], c: Counter[str], d: int) -> str:
    """The wrapped tail goes; the line break stays, so the lines still read as pasted."""
    return m["head"] if r.is_continuation(m["run"]) else m[0]


# Order matters: see the module docstring. A kept "name: value" resumes after its
# separator: what looked like its value may be the next pair ("invalid token: password: x").
_RULES: list[Rule] = [
    ("PRIVATE KEY", r.PEM, _whole(r.KEY), None),
    ("%", r.PERCENT_RUN, _percent, None),
    ("://", r.URL_CREDENTIALS, _url_credentials, None),
    ("://", r.URL_TOKEN_USER, _url_token_user, None),
    (None, r.WEBHOOK, _webhook, None),
    ("eyJ", r.JWT_RE, _whole(r.JWT), None),
    (None, r.PROVIDER_TOKEN, _whole(r.TOKEN), None),
    ("\n", r.TRUNCATED_TOKEN, _whole(r.TOKEN), None),
    (None, r.BASE64_RUN, _base64, None),
    (None, r.AUTH_HEADER, _auth_header, None),
    (None, r.BEARER, _bearer, None),
    (None, r.COOKIE, _cookie, None),
    ("-p", r.CLI_GLUED, _cli, None),
    (None, r.CLI_SPACED, _cli, None),
    (None, r.KEY_VALUE, _key_value, "sep"),
    (None, r.AWS_SECRET, _aws_secret, None),
    ("\n", r.CONTINUATION, _continuation, None),  # after every rule that writes a secret
    ("@", r.EMAIL_RE, _whole(r.EMAIL), None),
    (None, r.CARD_RE, _card, None),
    (None, r.IBAN_RE, _iban, None),
    (None, r.NATIONAL_ID_RE, _national_id, None),
    (None, r.PHONE_RE, _whole(r.PHONE), None),
    (":", r.IPV6_CANDIDATE, _ipv6, None),
    (".", r.IPV4, _ipv4, None),
    (".", r.HOST_RE, _host, None),
    (None, r.HOME_PATH, _home, None),
    ("~", r.TILDE_HOME, _tilde, None),
]


def redact(text: str) -> Redacted:
    """``text`` with secrets and personal data replaced by placeholders (`PLACEHOLDERS`).

    A placeholder can open a boundary that the replaced text closed (``/home/0/home/0``:
    the second home directory follows a word character until the first becomes
    ``<user>``), so the rules run again while they still change something; a text with
    nothing to replace, the usual case, is read once.
    """
    if not isinstance(text, str):
        text = "" if text is None else str(text)
    return _redact(text, 0)


def _redact(text: str, depth: int) -> Redacted:
    counts: Counter[str] = Counter()
    for _ in range(_MAX_ROUNDS):
        before = sum(counts.values())
        text = _round(text, counts, depth)
        if sum(counts.values()) == before:
            break
    return Redacted(text, dict(counts))


_MAX_ROUNDS = 4


def _round(text: str, counts: Counter[str], depth: int) -> str:
    for trigger, pattern, replace, resume in _RULES:
        if trigger is not None and trigger not in text:
            continue
        text = _sub(text, pattern, replace, resume, counts, depth)
    return text


def _sub(
    text: str,
    pattern: re.Pattern[str],
    replace: Replace,
    resume: str | None,
    counts: Counter[str],
    depth: int,
) -> str:
    """`re.sub`, except that a match the replacement keeps unchanged can resume the
    search inside itself (at the end of group ``resume``) instead of after it. Only
    `_MAX_NESTED` kept matches in a row, each begun inside the one before, read on inside:
    past that, the search resumes after the match, so a hostile run of nested names
    ("token:token:token:...") costs a bounded number of reads per character."""
    parts: list[str] = []
    done = pos = 0
    nested, kept_until = 0, -1
    while (m := pattern.search(text, pos)) is not None:
        new = replace(m, counts, depth)
        if new == m[0]:
            nested = nested + 1 if m.start() < kept_until else 0
            kept_until = m.end()
            inside = resume is not None and nested < _MAX_NESTED
            pos = m.end(resume) if resume is not None and inside else m.end()
            pos = max(pos, m.start() + 1)
            continue
        nested, kept_until = 0, -1
        parts.append(text[done : m.start()])
        parts.append(new)
        done = pos = max(m.end(), m.start() + 1)
    if not parts:
        return text
    parts.append(text[done:])
    return "".join(parts)


_MAX_NESTED = 2
