"""The shapes `redact` replaces: one bounded regex per shape, and the checks that keep
message words out of them.

Every regex here runs on untrusted text of any size, with Python's backtracking `re`. They
stay linear because each one (a) starts with a literal or a look-behind that lets it begin
only at the start of a run of its first character class, so a long run is entered once and
not at every position inside it, and (b) repeats only with bounded counts (`{1,64}`), so a
failed attempt costs at most its bound. No quantified group contains another unbounded
quantifier. `tests/loop/text/test_redact.py` checks the linearity with hostile inputs at two
sizes (docs/reliability.md#r11-redos).

Host names are the hard case: `org.apache.kafka.common.errors.TimeoutException` and
`django.db.models` are dotted words, not hosts. A host is only a dotted name whose last
label is in `_TLDS` (chosen without the country codes that double as file extensions and
attribute names: `.py`, `.rs`, `.md`, `.so`, `.id`, `.name`, `.me`, `.in`, ...) or an
internal suffix, not followed by another dotted label. Public documentation hosts that
error messages print themselves (`sqlalche.me`, `docs.djangoproject.com`) are kept, so the
message still reads as it did.
"""

from __future__ import annotations

import ipaddress
import re


def _placeholder(kind: str) -> str:
    return f"<{kind}>"


SECRET = _placeholder("secret")
TOKEN = _placeholder("token")
PASSWORD = _placeholder("password")
JWT = _placeholder("jwt")
KEY = _placeholder("key")
CARD = _placeholder("card")
EMAIL = _placeholder("email")
IP = _placeholder("ip")
HOST = _placeholder("host")
USER = _placeholder("user")

#: Every placeholder `redact` writes, with what it stands for (shown in previews).
PLACEHOLDERS = {
    SECRET: "a secret value (API key, AWS secret key, cookie, connection-string key)",
    TOKEN: "an access token or session id (provider tokens, bearer tokens, AWS key ids)",
    PASSWORD: "a password (in a URL, a DSN or a key=value pair)",
    JWT: "a JSON Web Token",
    KEY: "a private key block (PEM)",
    CARD: "a payment card number (Luhn-checked)",
    EMAIL: "an email address",
    IP: "an IPv4 or IPv6 address (loopback and unspecified addresses are kept)",
    HOST: "a host name (public documentation hosts are kept)",
    USER: "a user name (home directories, URL and DSN users)",
}

_PLACEHOLDER_RE = re.compile("|".join(map(re.escape, PLACEHOLDERS)))

# -- private key blocks ------------------------------------------------------------------
# Optional header lines, then the body: base64, whitespace and backslashes (JSON-escaped
# line breaks) as ONE character class, which `re` runs without backtracking; the END line
# when present. A truncated key is redacted up to the first character that cannot be in
# a key (the next word after it may go with it: privacy first).
PEM = re.compile(
    r"-----BEGIN [A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----"
    r"(?:(?:\r?\n|\\(?:r\\)?n)(?:Proc-Type|DEK-Info|Comment):[^\n\\]{0,200}){0,4}"
    r"[A-Za-z0-9+/=\\\s]*"
    r"(?:-----END [A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----)?"
)

# -- credentials in URLs: scheme://user:password@host ------------------------------------
URL_CREDENTIALS = re.compile(
    r"(?<![\w+.-])(?P<scheme>[A-Za-z][\w+.-]{0,30}://)"
    r"(?P<user>[^\s:/?#@<>\"'\\]{0,128}):(?P<pw>[^\s/?#@<>\"'\\]{1,256})@"
)

# -- JSON Web Tokens: header and payload are base64url JSON, so both start with "eyJ" -----
JWT_RE = re.compile(r"(?<![\w-])eyJ[\w-]{4,4096}\.eyJ[\w-]{4,8192}\.[\w-]{0,4096}")

# -- provider tokens -----------------------------------------------------------------------
_TOKENS = [
    r"(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AIPA|ANPA|ANVA|APKA|AROA)[A-Z0-9]{16}",  # AWS key id
    r"gh[pousr]_[A-Za-z0-9]{36,251}",  # GitHub classic tokens
    r"github_pat_[A-Za-z0-9_]{22,251}",  # GitHub fine-grained tokens
    r"glpat-[\w-]{20,64}",  # GitLab personal access tokens
    r"(?:glptt|gldt|glrt|glcbt|glsoat)-[\w-]{20,64}",  # other GitLab tokens
    r"xox[abposer]-[A-Za-z0-9-]{10,250}",  # Slack bot/user/app tokens
    r"xapp-[A-Za-z0-9-]{10,250}",  # Slack app-level tokens
    r"(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{10,247}",  # Stripe keys
    r"whsec_[A-Za-z0-9]{20,100}",  # Stripe webhook secrets
    r"AIza[\w-]{35}",  # Google API keys
    r"ya29\.[\w-]{20,2048}",  # Google OAuth access tokens
    r"sk-(?:proj-|svcacct-|admin-|ant-)?[A-Za-z0-9_-]{20,256}",  # OpenAI / Anthropic keys
    r"npm_[A-Za-z0-9]{36}",  # npm tokens
    r"SK[0-9a-f]{32}",  # Twilio API key sids
    r"SG\.[\w-]{16,32}\.[\w-]{30,64}",  # SendGrid keys
    r"hf_[A-Za-z0-9]{30,40}",  # Hugging Face tokens
    r"pypi-AgE[\w-]{50,300}",  # PyPI upload tokens
    r"dop_v1_[0-9a-f]{64}",  # DigitalOcean tokens
    r"shp(?:at|ss|ca|pa)_[0-9a-fA-F]{32}",  # Shopify tokens
    r"dckr_pat_[\w-]{20,64}",  # Docker Hub tokens
]
PROVIDER_TOKEN = re.compile(r"(?<![\w-])(?:" + "|".join(_TOKENS) + r")(?![\w-])")

# An AWS secret access key: 40 base64 characters. Standalone only with a '/' or '+' and
# mixed case and digits (a bare 40-character word is far more often an identifier).
AWS_SECRET = re.compile(r"(?<![A-Za-z0-9/+=])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])")


def looks_like_aws_secret(value: str) -> bool:
    """Random base64 has several of each character kind; a 40-character path does not."""
    return (
        ("/" in value or "+" in value)
        and "//" not in value
        and any(c.isdigit() for c in value)
        and sum(c.isupper() for c in value) >= 4
        and sum(c.islower() for c in value) >= 4
    )


# -- HTTP auth -------------------------------------------------------------------------
AUTH_HEADER = re.compile(
    r"(?i)(?<![\w-])(?P<name>(?:proxy-)?authorization|x-auth-token|x-api-key|api-key"
    r"|x-amz-security-token)(?P<sep>[\"']?[ \t]{0,8}[:=][ \t]{0,8}[\"']?)"
    r"(?:(?P<scheme>bearer|basic|token|digest|negotiate|apikey|aws4-hmac-sha256)[ \t]{1,8})?"
    r"(?P<value>[^\s\"',;]{1,4096})"
)
BEARER = re.compile(
    r"(?<![\w-])(?P<scheme>Bearer|bearer|BEARER|Basic|basic|Token)[ \t]{1,8}"
    r"(?P<value>[\w.~+/=-]{8,4096})"
)


def looks_like_credential(value: str, scheme: str) -> bool:
    """A value after "Bearer"/"Basic" that is a credential, not the next English word
    ("Basic authentication failed", "basic keep-alive only", "Bearer token expired")."""
    if scheme.lower() == "basic":
        if _BASE64.fullmatch(value) is None:
            return False
        return any(c.isdigit() or c == "=" for c in value) or any(c.isupper() for c in value[1:])
    return len(value) >= 12 and (
        any(c.isdigit() for c in value) or any(c.isupper() for c in value[1:])
    )


_BASE64 = re.compile(r"[A-Za-z0-9+/]{4,4096}={0,2}")


# -- cookies -------------------------------------------------------------------------
COOKIE = re.compile(
    r"(?i)(?<![\w-])(?P<name>set-cookie|cookie)(?P<sep>[ \t]{0,8}:[ \t]{0,8})"
    r"(?P<value>[^\r\n]{1,4096})"
)

# -- key=value pairs: DSNs, env vars, config, JSON and Python dicts -----------------------
# A name (with an optional prefix: DB_PASSWORD, aws_secret_access_key, x-api-key), an
# optional closing quote, '=' or ':', then a quoted or bare value.
_NAMES_PW = r"password|passwd|passphrase|pwd|pass"
_NAMES_SEC = (
    r"secret|client_secret|api[_-]?key|apikey|access[_-]?key(?:[_-]?id)?|secret[_-]?key"
    r"|private[_-]?key|accountkey|sharedaccesskey|credentials?|sig|signature"
)
_NAMES_TOK = (
    r"token|access_token|refresh_token|auth_token|id_token|session[_-]?id|sessionid"
    r"|jsessionid|phpsessid|asp\.net_sessionid|connect\.sid|csrftoken|csrf_token|xsrf-token"
)
_NAMES_USR = r"user|username|login|user_?id"
KEY_VALUE = re.compile(
    r"(?i)(?<![\w.-])(?P<name>[\w.-]{0,40}?(?:"
    rf"(?P<pw>{_NAMES_PW})|(?P<sec>{_NAMES_SEC})|(?P<tok>{_NAMES_TOK})|(?P<usr>{_NAMES_USR})))"
    r"(?P<sep>[\"']?[ \t]{0,8}(?:=|:(?!:))[ \t]{0,8})"
    r"(?:(?P<q>[\"'])(?P<qvalue>[^\"'\r\n]{0,1024})(?P=q)|(?P<value>[^\s\"',;&)}\]]{1,1024}))"
)


# Values that say nothing about anyone: flags and empty markers (``is_superuser=True``).
_PLAIN_VALUES = frozenset(("true", "false", "none", "null", "nil", "yes", "no", "0", "1", "{}"))


def is_plain_value(value: str) -> bool:
    return value.rstrip(".").lower() in _PLAIN_VALUES


def is_placeholder(value: str) -> bool:
    return _PLACEHOLDER_RE.fullmatch(value) is not None


def secretish(value: str) -> bool:
    """A bare value after ``token: `` that is a token, not the next message word
    ("Unexpected token: ')'", "invalid token: expired")."""
    return len(value) >= 16 and any(c.isdigit() for c in value) and any(c.isalpha() for c in value)


# -- payment cards: 13-19 digits, optional single spaces/dashes, a network prefix, Luhn ---
CARD_RE = re.compile(r"(?<![\d.-])(?:[2-6]\d(?:[ -]?\d){11,17})(?![\d-]|\.\d)")
_CARD_PREFIX = re.compile(r"4|5[1-5]|2[2-7]|3[47]|3[0689]|6(?:011|5|4[4-9]|2)")


def is_card(candidate: str) -> bool:
    digits = [int(c) for c in candidate if c.isdigit()]
    if not 13 <= len(digits) <= 19 or not _CARD_PREFIX.match(candidate):
        return False
    total = 0
    for i, d in enumerate(reversed(digits)):
        if i % 2:
            d *= 2
            if d > 9:
                d -= 9
        total += d
    return total % 10 == 0


# -- emails ------------------------------------------------------------------------
EMAIL_RE = re.compile(
    r"(?<![\w.+%-])[\w.+%-]{1,64}@(?:[A-Za-z0-9-]{1,63}\.){1,8}[A-Za-z]{2,24}(?![\w-])"
)

# -- IP addresses --------------------------------------------------------------------
IPV4 = re.compile(
    r"(?<![\w.])(?:(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)"
    r"(?![\w]|\.\d)"
)
IPV6_CANDIDATE = re.compile(r"(?<![\w:.])[0-9A-Fa-f:.]{2,45}(?:%[\w.]{1,16})?(?![\w:])")


def ipv4_identifies_a_machine(addr: str) -> bool:
    """Loopback and 0.0.0.0/8 say nothing about anyone (and "0.10.1.0" is a version)."""
    return not addr.startswith(("127.", "0."))


def ipv6_to_redact(candidate: str) -> str | None:
    """The part of a candidate to replace (without a trailing sentence dot), or None."""
    addr = candidate.rstrip(".")
    if addr.count(":") < 2:
        return None
    try:
        ip = ipaddress.IPv6Address(addr.split("%", 1)[0])
    except ValueError:
        return None
    if ip.is_loopback or ip.is_unspecified:
        return None
    return addr


# -- host names ----------------------------------------------------------------------
_TLDS = (
    "com|net|org|edu|gov|mil|io|dev|uk|de|fr|nl|eu|ru|cn|jp|br|au|ch"
    "|biz|xyz|tech|online|site"
    # internal suffixes (Kubernetes, mDNS, AWS/GCP internal names, corporate LANs)
    "|internal|local|localdomain|lan|corp|intranet|home\\.arpa|consul"
)
HOST_RE = re.compile(
    r"(?<![\w./-])(?:[A-Za-z0-9][A-Za-z0-9-]{0,62}\.){1,10}(?:"
    + _TLDS
    + r")(?![\w(-]|\.[A-Za-z0-9])"
)
_PUBLIC_HOSTS = (
    "github.com",
    "gitlab.com",
    "djangoproject.com",
    "sqlalche.me",
    "sqlalchemy.org",
    "python.org",
    "pypi.org",
    "apache.org",
    "etcd.io",
    "risingwave.com",
    "risingwave.dev",
    "rust-lang.org",
    "docs.rs",
    "crates.io",
    "golang.org",
    "go.dev",
    "postgresql.org",
    "stackoverflow.com",
    "example.com",
    "example.org",
)


# Dotted names of code that end like a host.
_NOT_HOSTS = frozenset(("threading.local", "_thread._local", "asyncio.local"))


def is_public_host(host: str) -> bool:
    """Kept as written: public documentation hosts and dotted code names."""
    h = host.lower()
    return h in _NOT_HOSTS or any(h == p or h.endswith("." + p) for p in _PUBLIC_HOSTS)


# -- home directories: the user name only ----------------------------------------------
HOME_PATH = re.compile(
    r"(?P<root>(?<![\w.-])/(?:home|Users|export/home)/|(?<![A-Za-z])[A-Za-z]:(?:\\\\|\\|/)"
    r"(?:Users|Documents and Settings)(?:\\\\|\\|/))"
    r"(?P<name>[^\\/\s:\"'<>*?|]{1,64})(?=[\\/\s:\"'<>]|$)"
)
_SHARED_HOMES = frozenset(("shared", "public", "default", "all users", "default user"))


def is_personal_home(name: str) -> bool:
    return name.lower() not in _SHARED_HOMES
