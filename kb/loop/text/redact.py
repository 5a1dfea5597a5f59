"""Replace secrets and personal data in pasted text with placeholders, before anything of a
paste is stored or shown back as "what will be sent".

Why: a report of an unknown error keeps a few sample lines for curators. People paste logs
with API keys, database passwords, session cookies, emails and addresses in them; the
product promises that none of that is kept (docs/reliability.md#r27-paste-privacy). The
user sees the redacted text before sending, so redaction must also leave the error's own
words readable: class names, `Connection refused`, `column "x" does not exist`.

What: `redact(text)` applies the rules of `_redact_rules` in a fixed order (private key
blocks and URL credentials first, because their parts would otherwise be taken apart by
the later rules; emails before hosts, so an address goes whole) and returns the text and
how many of each placeholder it wrote, so a preview can say "3 secrets replaced". The
placeholders are listed, with what each stands for, in `PLACEHOLDERS`.

Properties the tests hold it to: no secret of the shape table survives; message words of
real errors do; idempotent (already-placed placeholders are never replaced again); never
raises on a `str`; the output is at most a small constant times the input; linear time
(bounded regexes, see `_redact_rules`). Not attempted: free-form secrets with no shape or
name beside them (a bare random word is indistinguishable from an identifier), and names
of people in prose.
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


Replace = Callable[[re.Match[str], Counter[str]], str]
Rule = tuple[str | None, re.Pattern[str], Replace]


def _put(counts: Counter[str], placeholder: str) -> str:
    counts[placeholder] += 1
    return placeholder


def _whole(placeholder: str) -> Callable[[re.Match[str], Counter[str]], str]:
    return lambda m, c: _put(c, placeholder)


def _pem(m: re.Match[str], c: Counter[str]) -> str:
    return _put(c, r.KEY)


def _url_credentials(m: re.Match[str], c: Counter[str]) -> str:
    user = m["user"]
    shown = _put(c, r.USER) if user and not r.is_placeholder(user) else user
    pw = m["pw"] if r.is_placeholder(m["pw"]) else _put(c, r.PASSWORD)
    return f"{m['scheme']}{shown}:{pw}@"


def _aws_secret(m: re.Match[str], c: Counter[str]) -> str:
    return _put(c, r.SECRET) if r.looks_like_aws_secret(m[0]) else m[0]


def _auth_header(m: re.Match[str], c: Counter[str]) -> str:
    value = m["value"]
    if r.is_placeholder(value):
        return m[0]
    scheme = f"{m['scheme']} " if m["scheme"] else ""
    placeholder = r.SECRET if (m["scheme"] or "").lower() == "basic" else r.TOKEN
    return f"{m['name']}{m['sep']}{scheme}{_put(c, placeholder)}"


def _bearer(m: re.Match[str], c: Counter[str]) -> str:
    if not r.looks_like_credential(m["value"], m["scheme"]):
        return m[0]
    placeholder = r.SECRET if m["scheme"].lower() == "basic" else r.TOKEN
    return f"{m['scheme']} {_put(c, placeholder)}"


def _cookie(m: re.Match[str], c: Counter[str]) -> str:
    if r.is_placeholder(m["value"].strip()):
        return m[0]
    return f"{m['name']}{m['sep']}{_put(c, r.SECRET)}"


def _key_value(m: re.Match[str], c: Counter[str]) -> str:
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
    else:
        placeholder = r.USER
    if ":" in m["sep"] and not _colon_value_is_secret(m, value, quoted):
        return m[0]
    shown = _put(c, placeholder)
    if quoted:
        shown = f"{m['q']}{shown}{m['q']}"
    return f"{m['name']}{m['sep']}{shown}"


def _colon_value_is_secret(m: re.Match[str], value: str, quoted: bool) -> bool:
    """``name: value`` is as often a message ("Unexpected token: ')'") as config
    ("password: hunter2"). A quoted name (JSON, a Python dict) is config; otherwise only
    strong names take any value, and the rest need a token shape."""
    if m["sep"][0] in "\"'":
        return True
    if m["usr"]:
        return False
    keyword = (m["pw"] or "").lower()
    if quoted or not keyword or keyword in _WEAK_COLON_NAMES:
        return r.secretish(value)
    return value.lower() not in _MESSAGE_WORDS


def _card(m: re.Match[str], c: Counter[str]) -> str:
    return _put(c, r.CARD) if r.is_card(m[0]) else m[0]


def _ipv4(m: re.Match[str], c: Counter[str]) -> str:
    return _put(c, r.IP) if r.ipv4_identifies_a_machine(m[0]) else m[0]


def _ipv6(m: re.Match[str], c: Counter[str]) -> str:
    addr = r.ipv6_to_redact(m[0])
    if addr is None:
        return m[0]
    return _put(c, r.IP) + m[0][len(addr) :]


def _host(m: re.Match[str], c: Counter[str]) -> str:
    return m[0] if r.is_public_host(m[0]) else _put(c, r.HOST)


def _home(m: re.Match[str], c: Counter[str]) -> str:
    if not r.is_personal_home(m["name"]):
        return m[0]
    return f"{m['root']}{_put(c, r.USER)}"


# (a substring the text must contain for the rule to run -- a C-speed skip -- or None,
#  the regex, the replacement). Order matters: see the module docstring.
_RULES: list[Rule] = [
    ("PRIVATE KEY", r.PEM, _pem),
    ("://", r.URL_CREDENTIALS, _url_credentials),
    ("eyJ", r.JWT_RE, _whole(r.JWT)),
    (None, r.PROVIDER_TOKEN, _whole(r.TOKEN)),
    (None, r.AUTH_HEADER, _auth_header),
    (None, r.BEARER, _bearer),
    (None, r.COOKIE, _cookie),
    (None, r.KEY_VALUE, _key_value),
    (None, r.AWS_SECRET, _aws_secret),
    ("@", r.EMAIL_RE, _whole(r.EMAIL)),
    (None, r.CARD_RE, _card),
    (":", r.IPV6_CANDIDATE, _ipv6),
    (".", r.IPV4, _ipv4),
    (".", r.HOST_RE, _host),
    (None, r.HOME_PATH, _home),
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
    counts: Counter[str] = Counter()
    for _ in range(_MAX_ROUNDS):
        before = sum(counts.values())
        text = _round(text, counts)
        if sum(counts.values()) == before:
            break
    return Redacted(text, dict(counts))


_MAX_ROUNDS = 4


def _round(text: str, counts: Counter[str]) -> str:
    for trigger, pattern, replace in _RULES:
        if trigger is not None and trigger not in text:
            continue

        def sub(m: re.Match[str], replace: Replace = replace) -> str:
            return replace(m, counts)

        text = pattern.sub(sub, text)
    return text
