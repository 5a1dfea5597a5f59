"""The shapes `redact` replaces: one bounded regex per shape, and the checks that keep
message words out of them.

Every regex here runs on untrusted text of any size, with Python's backtracking `re`. They
stay linear because each one (a) starts with a literal or a look-behind that lets it begin
only at the start of a run of its first character class, so a long run is entered once and
not at every position inside it, and (b) repeats only with bounded counts (`{1,64}`), so a
failed attempt costs at most its bound. No quantified group contains another unbounded
quantifier, and a repeated group is made of disjoint classes (a digit, then separators), so
it matches a text one way only; a look-ahead that scans forward is bounded as well.
Decoded values (base64, percent-encoding) are read again a bounded number of levels deep.
`tests/loop/text/test_redact.py` checks the linearity with hostile inputs at two sizes
(docs/reliability.md#r11-redos, #r34-redaction).

Host names are the hard case: `org.apache.kafka.common.errors.TimeoutException` and
`django.db.models` are dotted words, not hosts. A host is only a dotted name whose last
label is in `_TLDS` (chosen without the country codes that double as file extensions and
attribute names: `.py`, `.rs`, `.md`, `.so`, `.id`, `.name`, `.me`, `.in`, ...) or an
internal suffix, not followed by another dotted label. Public documentation hosts that
error messages print themselves (`sqlalche.me`, `docs.djangoproject.com`) are kept, so the
message still reads as it did.
"""

from __future__ import annotations

import base64
import binascii
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
PHONE = _placeholder("phone")
IBAN = _placeholder("iban")
NATIONAL_ID = _placeholder("national-id")

#: Every placeholder `redact` writes, with what it stands for (shown in previews).
PLACEHOLDERS = {
    SECRET: (
        "a secret value (API key, AWS secret key, cookie, connection-string key, webhook"
        " path, an encoded value that holds a secret)"
    ),
    TOKEN: "an access token or session id (provider tokens, bearer tokens, AWS key ids)",
    PASSWORD: "a password (in a URL, a DSN or a key=value pair)",
    JWT: "a JSON Web Token",
    KEY: "a private key block (PEM)",
    CARD: "a payment card number (network prefix and Luhn checked)",
    EMAIL: "an email address",
    IP: "an IPv4 or IPv6 address (loopback and unspecified addresses are kept)",
    HOST: "a host name (public documentation hosts are kept)",
    USER: "a user name (home directories, `~user`, URL and DSN users)",
    PHONE: "a phone number (international `+` form, North American forms, or named)",
    IBAN: "an IBAN (mod-97 checked)",
    NATIONAL_ID: "a national id (US SSN, UK NI number, Spanish DNI/NIE, or named)",
}

_PLACEHOLDER_RE = re.compile("|".join(map(re.escape, PLACEHOLDERS)))


# -- private key blocks ------------------------------------------------------------------
# Optional header lines, then the body: base64, whitespace and backslashes (JSON-escaped
# line breaks) as ONE character class, which `re` runs without backtracking; the END line
# when present. A truncated key is redacted up to the first character that cannot be in
# a key (the next word after it may go with it: privacy first).
PEM = re.compile(
    r"-----BEGIN [A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----"
    r"(?:(?:\r?\n|\\(?:r\\)?n)(?:Proc-Type|DEK-Info|Comment|Version):[^\n\\]{0,200}){0,4}"
    r"[A-Za-z0-9+/=\\\s]*"
    r"(?:-----END [A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----)?"
)

# -- credentials in URLs: scheme://user:password@host ------------------------------------
# The password runs to the last '@' of the run (up to four): it may hold '#', '/', '?' and
# '@' ("redis://:ab/cd#ef9@cache", "svc:Aut0mn!Rain#77@db") even though a URL parser would
# stop at them -- people paste what they typed; an email later in the same URL goes with
# it (privacy first). Not a password: a port followed by a path
# ("http://host:8080/users/bob@example.com" is a host, a port and an email).
URL_CREDENTIALS = re.compile(
    r"(?<![\w+.-])(?P<scheme>[A-Za-z][\w+.-]{0,30}://)"
    r"(?P<user>[^\s:/?#@<>\"'\\]{0,128}):(?!\d{1,5}(?:/|$))"
    r"(?P<pw>[^\s@<>\"'\\]{1,256}(?:@[^\s@<>\"'\\]{1,256}){0,3})@"
)
# scheme://TOKEN@host: a user part that is a key, not a name (Sentry DSNs, git remotes with
# a token as the user).
URL_TOKEN_USER = re.compile(
    r"(?<![\w+.-])(?P<scheme>[A-Za-z][\w+.-]{0,30}://)(?P<tok>[\w.~-]{16,256})@"
)


def token_shaped(value: str) -> bool:
    """Random-looking: letters and digits mixed (a name or a word has no digits, or few)."""
    digits = sum(c.isdigit() for c in value)
    letters = sum(c.isalpha() for c in value)
    return digits >= 2 and letters >= 2


# -- webhook URLs: the path is the secret -----------------------------------------------
WEBHOOK = re.compile(
    r"(?P<keep>hooks\.slack\.com/(?:services|workflows|triggers)/"
    r"|discord(?:app)?\.com/api/webhooks/"
    r"|\.webhook\.office\.com/webhookb2/"
    r"|chat\.googleapis\.com/v1/spaces/)"
    r"(?P<path>[^\s\"'<>\\]{12,512})"
)

# -- JSON Web Tokens: header and payload are base64url JSON, so both start with "eyJ" -----
JWT_RE = re.compile(r"(?<![\w-])eyJ[\w-]{4,4096}\.eyJ[\w-]{4,8192}\.[\w-]{0,4096}")

# -- provider tokens -----------------------------------------------------------------------
# The formats the providers publish for secret scanning (GitHub's secret scanning partners,
# gitleaks' rules): a fixed prefix and a bounded body, so a match is a token whatever the
# words around it.
_TOKENS = [
    r"(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AIPA|ANPA|ANVA|APKA|AROA)[A-Z0-9]{16}",  # AWS
    r"gh[pousr]_[A-Za-z0-9]{36,251}",  # GitHub classic, OAuth, user, server, refresh tokens
    r"github_pat_[A-Za-z0-9_]{22,251}",  # GitHub fine-grained tokens
    r"glpat-[\w.-]{20,300}",  # GitLab personal access tokens (also routable)
    r"(?:glptt|gldt|glrt|glcbt|glsoat|glft|glimt|glagent|gloas|glffct)-[\w.-]{20,300}",  # GitLab
    r"GR1348941[\w-]{20,64}",  # GitLab runner registration tokens
    r"xox[abposer]-[A-Za-z0-9-]{10,250}",  # Slack bot/user/app tokens
    r"xoxe\.xox[bp]-[A-Za-z0-9-]{10,250}",  # Slack configuration tokens
    r"xapp-[A-Za-z0-9-]{10,250}",  # Slack app-level tokens
    r"(?:sk|rk|pk)_(?:live|test|prod)_[A-Za-z0-9]{10,247}",  # Stripe keys
    r"whsec_[A-Za-z0-9]{20,100}",  # Stripe webhook secrets
    r"AIza[\w-]{35}",  # Google API keys
    r"ya29\.[\w-]{20,2048}",  # Google OAuth access tokens
    r"1//0[\w-]{30,512}",  # Google OAuth refresh tokens
    r"GOCSPX-[\w-]{20,40}",  # Google OAuth client secrets
    r"sk-(?:proj-|svcacct-|admin-|ant-)?[A-Za-z0-9_-]{20,256}",  # OpenAI / Anthropic keys
    r"npm_[A-Za-z0-9]{36}",  # npm tokens
    r"SK[0-9a-fA-F]{32}",  # Twilio API key sids
    r"SG\.[\w-]{16,32}\.[\w-]{30,64}",  # SendGrid keys
    r"hf_[A-Za-z0-9]{30,40}",  # Hugging Face tokens
    r"api_org_[A-Za-z0-9]{30,40}",  # Hugging Face organisation tokens
    r"pypi-AgE[\w-]{50,1000}",  # PyPI upload tokens
    r"do[opr]_v1_[0-9a-f]{64}",  # DigitalOcean tokens
    r"shp(?:at|ss|ca|pa)_[0-9a-fA-F]{32}",  # Shopify tokens
    r"dckr_(?:pat|oat)_[\w-]{20,64}",  # Docker Hub tokens
    r"HRKU-AA[\w-]{58}",  # Heroku API keys
    r"dapi[0-9a-f]{32}(?:-\d)?",  # Databricks tokens
    r"lin_api_[A-Za-z0-9]{40}",  # Linear API keys
    r"ATATT3[\w=-]{150,250}",  # Atlassian API tokens
    r"NR(?:AK|II|JS)-[A-Za-z0-9-]{19,40}",  # New Relic keys
    r"PMAK-[0-9a-fA-F]{24}-[0-9a-fA-F]{34}",  # Postman API keys
    r"pul-[0-9a-f]{40}",  # Pulumi tokens
    r"hv[sb]\.[\w-]{90,300}",  # HashiCorp Vault tokens
    r"[A-Za-z0-9]{14}\.atlasv1\.[\w=-]{60,70}",  # Terraform Cloud tokens
    r"glc_[A-Za-z0-9+/]{32,400}={0,3}",  # Grafana Cloud tokens
    r"glsa_[A-Za-z0-9]{32}_[0-9a-fA-F]{8}",  # Grafana service account tokens
    r"eyJrIjoi[A-Za-z0-9]{70,400}={0,3}",  # Grafana API keys
    r"sntry[su]_[\w+/=]{40,400}",  # Sentry tokens
    r"sq0(?:atp|csp)-[\w-]{22,60}",  # Square tokens
    r"EAA[ACM][A-Za-z0-9]{22,400}",  # Square / Meta access tokens
    r"key-[0-9a-f]{32}",  # Mailgun keys
    r"[0-9a-f]{32}-us\d{1,2}",  # Mailchimp keys
    r"\d{8,10}:AA[\w-]{33}",  # Telegram bot tokens
    r"AGE-SECRET-KEY-1[02-9AC-HJ-NP-Z]{58}",  # age secret keys
    r"ops_eyJ[A-Za-z0-9+/]{100,1000}={0,3}",  # 1Password service account tokens
    r"dp\.(?:pt|st|sa|ct|scim|audit)\.[A-Za-z0-9]{40,44}",  # Doppler tokens
    r"dt0c01\.[A-Za-z0-9]{24}\.[A-Za-z0-9]{64}",  # Dynatrace tokens
    r"EZ[AT]K[A-Za-z0-9]{54}",  # EasyPost keys
    r"fo1_[\w-]{43}",  # Fly.io tokens
    r"FLW(?:SECK|PUBK)_TEST-[0-9a-hA-H]{12,32}(?:-X)?",  # Flutterwave keys
    r"ntn_\d{11}[A-Za-z0-9]{35}",  # Notion tokens
    r"secret_[A-Za-z0-9]{43}",  # Notion integration secrets (legacy)
    r"pplx-[A-Za-z0-9]{48}",  # Perplexity keys
    r"pscale_(?:tkn|pw|oauth)_[\w=.-]{32,64}",  # PlanetScale tokens and passwords
    r"pnu_[A-Za-z0-9]{36}",  # Prefect tokens
    r"rdme_[a-z0-9]{70}",  # ReadMe tokens
    r"rubygems_[0-9a-f]{48}",  # RubyGems keys
    r"tk-us-[\w-]{48}",  # Scalingo tokens
    r"xkeysib-[0-9a-f]{64}-[A-Za-z0-9]{16}",  # Brevo (Sendinblue) keys
    r"shippo_(?:live|test)_[0-9a-fA-F]{40}",  # Shippo tokens
    r"sha256~[\w-]{43}",  # OpenShift user tokens
    r"AKCp[A-Za-z0-9]{69}",  # Artifactory API keys
    r"LTAI[A-Za-z0-9]{20}",  # Alibaba Cloud access key ids
    r"p8e-[A-Za-z0-9]{32}",  # Adobe client secrets
    r"CLOJARS_[A-Za-z0-9]{60}",  # Clojars tokens
    r"sbp_[0-9a-f]{40}",  # Supabase tokens
    r"gsk_[A-Za-z0-9]{52}",  # Groq keys
    r"xai-[A-Za-z0-9]{60,100}",  # xAI keys
    r"r8_[A-Za-z0-9]{37}",  # Replicate tokens
    r"ico-[A-Za-z0-9]{32}",  # Infracost tokens
    r"sgp_[0-9a-fA-F]{16,40}(?:_[0-9a-fA-F]{40})?",  # Sourcegraph tokens
    r"sm_(?:aat|pat|sat)_[A-Za-z0-9]{16}",  # SettleMint tokens
    r"[MN][A-Za-z0-9]{23,25}\.[\w-]{6}\.[\w-]{27,38}",  # Discord bot tokens
    r"[A-Za-z0-9_~.]{3}\dQ~[A-Za-z0-9_~.-]{31,40}",  # Azure AD client secrets
]
# The look-ahead skips words shorter than the shortest format (a Slack token) before the
# formats are tried.
PROVIDER_TOKEN = re.compile(
    r"(?<![\w~.-])(?=[\w.~/+=:-]{15})(?:" + "|".join(_TOKENS) + r")(?![\w~-])"
)

# A token cut by a line break (a terminal or a log viewer wrapped it): a prefix that only
# tokens have, a body shorter than the full format, the end of the line. The rest of it on
# the next line goes with it (`CONTINUATION`).
TRUNCATED_TOKEN = re.compile(
    r"(?<![\w-])(?:gh[pousr]_|github_pat_|gl(?:pat|ptt|dt|rt)-|xox[abposer]-|xapp-"
    r"|(?:sk|rk)_(?:live|test|prod)_|sk-(?:proj|ant|svcacct|admin)-|AIza|ya29\.|npm_|hf_"
    r"|pypi-AgE|dckr_pat_|HRKU-AA|shp(?:at|ss|ca|pa)_|SG\.|AKIA|ASIA|eyJ)"
    r"[\w.-]{8,250}(?=\r?\n)"
)

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


# -- encodings: a secret inside base64 or percent-encoding ----------------------------------
# A run of base64 (standard or URL-safe) long enough to hold a "key=value" or a token. It
# is decoded and redacted like pasted text; only when that finds something does the run
# go (a random identifier decodes to bytes that are not text, and is kept).
BASE64_RUN = re.compile(r"(?<![A-Za-z0-9+/_-])[A-Za-z0-9+/_-]{16,4096}={0,2}(?![A-Za-z0-9+/=_-])")
# A run of non-space URL characters with a %XX escape in it: decoded and redacted as text.
# The look-ahead scans at most the run's bound, and a run is entered only at its start.
PERCENT_RUN = re.compile(r"(?<![^\s\"'<>])(?=[^\s\"'<>]{0,4096}?%[0-9A-Fa-f]{2})[^\s\"'<>]{3,4096}")
_PRINTABLE = re.compile(r"[\t\r\n\x20-\x7e\u00a0-\uffff]*")


def decode_base64(run: str) -> str | None:
    """The text a base64 run encodes, or None when it is not base64 of text."""
    body = run.rstrip("=")
    urlsafe = "-" in body or "_" in body
    if len(body) % 4 == 1 or (urlsafe and ("+" in body or "/" in body)):
        return None
    if not any(c.isdigit() or c in "+/-_" for c in body):
        return None  # a long plain word ("ImproperlyConfigured")
    padded = body + "=" * (-len(body) % 4)
    try:
        raw = base64.b64decode(padded, altchars=b"-_" if urlsafe else None, validate=True)
        text = raw.decode("utf-8")
    except (binascii.Error, ValueError):
        return None
    if not text.strip() or _PRINTABLE.fullmatch(text) is None:
        return None
    return text


def decode_percent(run: str) -> str | None:
    """The run with its %XX escapes decoded, or None when that changes nothing. Escapes of
    characters that end a value (spaces, quotes, angle brackets, backslashes, control
    characters) stay encoded: decoded, they would cut the secret they are part of and leave
    its pieces to the rules that read the decoded text. So does '%' (decoded once only)."""
    text = _ESCAPES.sub(_decode_escapes, run)
    return None if text == run else text


_ESCAPES = re.compile(r"(?:%[0-9A-Fa-f]{2}){1,64}")
_KEEP_ENCODED = frozenset(" \"'<>\\%\x7f")


def _decode_escapes(m: re.Match[str]) -> str:
    try:
        text = bytes.fromhex(m[0].replace("%", "")).decode("utf-8")
    except UnicodeDecodeError:  # "%cd" in a password, not an escape
        return m[0]
    return "".join(f"%{ord(ch):02X}" if ch in _KEEP_ENCODED or ch < " " else ch for ch in text)


# -- HTTP auth -------------------------------------------------------------------------
_ESCAPED_QUOTE = r"(?:\\{1,7})?[\"']"  # a quote, also JSON-escaped once or more
AUTH_HEADER = re.compile(
    r"(?i)(?<![\w-])(?P<name>(?:proxy-)?authorization|x-auth-token|x-api-key|api-key"
    r"|x-amz-security-token|x-goog-api-key|x-access-token|private-token|x-vault-token)"
    rf"(?P<sep>{_ESCAPED_QUOTE}?[ \t]{{0,8}}[:=][ \t]{{0,8}}{_ESCAPED_QUOTE}?)"
    r"(?:(?P<scheme>bearer|basic|token|digest|negotiate|apikey|aws4-hmac-sha256)[ \t]{1,8})?"
    r"(?P<value>[^\s\"',;\\]{1,4096})"
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
    if len(value) >= 16:  # longer than the words that follow "bearer" in messages
        return True
    return len(value) >= 12 and (
        any(c.isdigit() for c in value) or any(c.isupper() for c in value[1:])
    )


_BASE64 = re.compile(r"[A-Za-z0-9+/]{4,4096}={0,2}")


# -- cookies -------------------------------------------------------------------------
COOKIE = re.compile(
    r"(?i)(?<![\w-])(?P<name>set-cookie|cookie)(?P<sep>[ \t]{0,8}:[ \t]{0,8})"
    r"(?P<value>[^\r\n]{1,4096})"
)

# -- passwords on command lines ----------------------------------------------------------
# mysql and its tools take the password glued to -p ("-pSECRET"; "-p SECRET" prompts, and
# SECRET is then the database); sshpass and registry logins take it after "-p ".
CLI_GLUED = re.compile(
    r"(?<![\w-])(?P<head>(?:mysql\w{0,8}|mariadb[\w-]{0,8})(?:\.exe)?[^\n]{0,200}?[ \t]-p)"
    r"(?P<value>[^\s\"'<>]{1,256})"
)
CLI_SPACED = re.compile(
    r"(?<![\w-])(?P<head>(?:sshpass|(?:docker|podman|nerdctl|buildah|skopeo)[ \t]{1,4}login)"
    r"[^\n]{0,200}?[ \t]-p[ \t]{1,4}|--(?:password|passwd|pass|token|api-key|apikey|secret"
    r"|client-secret|access-token|auth-token|private-key)[ \t]{1,4})"
    r"(?:(?P<q>[\"'])(?P<qvalue>[^\"'\r\n]{1,256})(?P=q)|(?P<value>(?!-)[^\s\"'<>]{1,256}))"
)

# -- key=value pairs: DSNs, env vars, config, JSON and Python dicts -----------------------
# A name (with an optional prefix: DB_PASSWORD, aws_secret_access_key, x-api-key), an
# optional closing quote (also JSON-escaped, once or twice: a docker log line whose message
# is JSON), '=', ':', ':=' or '=>', then a quoted or bare value.
_NAMES_PW = r"password|passwd|passphrase|pwd|pass"
_NAMES_SEC = (
    r"secret|client_secret|api[_-]?key|apikey|access[_-]?key(?:[_-]?id)?|secret[_-]?key"
    r"|private[_-]?key(?:[_-]?id)?|accountkey|sharedaccesskey|credentials?|creds|sig|signature"
    r"|app[_-]?key|application[_-]?key|auth[_-]?key|master[_-]?key|encryption[_-]?key"
    r"|signing[_-]?key|client[_-]?key|account[_-]?key"
)
_NAMES_TOK = (
    r"token|access_token|refresh_token|auth_token|id_token|session[_-]?id|sessionid"
    r"|jsessionid|phpsessid|asp\.net_sessionid|connect\.sid|csrftoken|csrf_token|xsrf-token|auth"
)
_NAMES_USR = r"user|username|login|user_?id"
_NAMES_NID = (
    r"ssn|social[_-]?security[_-]?(?:number|no)|national[_-]?id|nino|tax[_-]?id"
    r"|passport[_-]?(?:number|no)"
)
_NAMES_PHONE = r"phone(?:[_-]?(?:number|no))?|mobile|msisdn|telephone"
# A bare value: stops at space, quotes, separators; it runs on over '&', ';', ',' and ')'
# when more of it follows that is not the next "name=" (a password "Sn0wd0g&9y" against a
# query "pw=x&user=y").
_BARE = r"(?:[^\s\"',;&)}\]\\]|\\(?![nrt\"'\\]))"
KEY_VALUE = re.compile(
    # the look-ahead: a cheap first test that a separator follows the word at all, before
    # the names are tried at each of its positions
    r"(?i)(?<![\w.-])(?=[\w.-]{1,80}(?:\\{0,7}[\"'])?[ \t]{0,8}[=:])(?P<name>[\w.-]{0,40}?(?:"
    rf"(?P<pw>{_NAMES_PW})|(?P<sec>{_NAMES_SEC})|(?P<tok>{_NAMES_TOK})|(?P<usr>{_NAMES_USR})"
    rf"|(?P<nid>{_NAMES_NID})|(?P<ph>{_NAMES_PHONE})))"
    rf"(?P<sep>{_ESCAPED_QUOTE}?[ \t]{{0,8}}(?:=>?|:=|:(?!:))[ \t]{{0,8}})"
    r"(?:(?P<q>(?:\\{1,7})?[\"'])(?P<qvalue>[^\"'\r\n]{0,1024}?)(?P=q)"
    rf"|(?P<oq>{_ESCAPED_QUOTE})?(?P<value>{_BARE}{{1,1024}}"
    rf"(?:[&;,)]{{1,3}}(?![\w.-]{{1,40}}=){_BARE}{{1,256}}){{0,8}}))"
)


# Values that say nothing about anyone: flags and empty markers (``is_superuser=True``).
_PLAIN_VALUES = frozenset(("true", "false", "none", "null", "nil", "yes", "no", "0", "1", "{}"))
# A format placeholder or a reference, not a value: "{}", "%s", "%w", "{0}", "${DB_PASS}",
# "$DB_PASS", "<your-password>" (messages as written in source, and config templates).
_NOT_A_VALUE = re.compile(
    r"\{[^{}]{0,40}\}?|%[-+ #0-9.]{0,8}[a-zA-Z]|\$\{?[A-Za-z_]\w{0,60}\}?|<[^<>]{1,60}>|\*{1,64}"
)


def is_plain_value(value: str) -> bool:
    v = value.rstrip(".")
    return v.lower() in _PLAIN_VALUES or _NOT_A_VALUE.fullmatch(v) is not None


def is_placeholder(value: str) -> bool:
    return _PLACEHOLDER_RE.fullmatch(value) is not None


def secretish(value: str) -> bool:
    """A bare value after ``token: `` that is a token, not the next message word
    ("Unexpected token: ')'", "invalid token: expired")."""
    if len(value) >= 20 and any(c.isdigit() for c in value):
        return True
    return len(value) >= 8 and token_shaped(value)


# -- payment cards: 13-19 digits, optional single spaces/dashes, a network prefix, Luhn ---
CARD_RE = re.compile(r"(?<![\d.-])(?:[2-6]\d(?:[ -]?\d){11,17})(?![\d-]|\.\d)")
# Visa, Mastercard (51-55, 2221-2720), Amex, Diners, JCB (3528-3589), Discover, UnionPay.
_CARD_PREFIX = re.compile(r"4|5[1-5]|2[2-7]|3[47]|3[0689]|35|6(?:011|5|4[4-9]|2)")


def _luhn(digits: list[int]) -> bool:
    total = 0
    for i, d in enumerate(reversed(digits)):
        if i % 2:
            d *= 2
            if d > 9:
                d -= 9
        total += d
    return total % 10 == 0


def is_card(candidate: str) -> bool:
    digits = [int(c) for c in candidate if c.isdigit()]
    if not 13 <= len(digits) <= 19 or not _CARD_PREFIX.match(candidate):
        return False
    return _luhn(digits)


# -- IBANs: country, check digits, 11-30 more letters or digits in optional groups of 4 ----
IBAN_RE = re.compile(
    r"(?<![\w-])[A-Z]{2}\d{2}(?:[ ]?[A-Z0-9]{4}){2,7}(?:[ ]?[A-Z0-9]{1,3})?(?![\w-])"
)


def is_iban(candidate: str) -> bool:
    """The ISO 13616 check: the rearranged number mod 97 is 1."""
    s = candidate.replace(" ", "")
    if not 15 <= len(s) <= 34:
        return False
    moved = s[4:] + s[:4]
    return int("".join(str(int(c, 36)) for c in moved)) % 97 == 1


# -- national ids ----------------------------------------------------------------------
# US social security numbers (never area 000, 666 or 9xx; never group 00 or serial 0000),
# UK National Insurance numbers (two prefix letters of the allowed sets, six digits, A-D),
# Spanish DNI/NIE (eight digits or X/Y/Z and seven, then the mod-23 letter).
NATIONAL_ID_RE = re.compile(
    r"(?<![\w-])(?:(?!000|666|9\d\d)\d{3}-(?!00)\d{2}-(?!0000)\d{4}"
    r"|[A-CEGHJ-PR-TW-Z][A-CEGHJ-NPR-TW-Z] ?\d{2} ?\d{2} ?\d{2} ?[A-D]"
    r"|[XYZ]?\d{7,8}-?[TRWAGMYFPDXBNJZSQVHLCKE])(?![\w-])"
)
_NINO_BAD_PREFIXES = frozenset(("BG", "GB", "NK", "KN", "TN", "NT", "ZZ"))
_DNI_LETTERS = "TRWAGMYFPDXBNJZSQVHLCKE"


def is_national_id(candidate: str) -> bool:
    if "-" in candidate and candidate[3:4] == "-":  # SSN
        return True
    if candidate[:2].isalpha():  # NINO
        return candidate[:2] not in _NINO_BAD_PREFIXES
    body = candidate.replace("-", "")
    number, letter = body[:-1], body[-1]
    if number[0] in "XYZ":
        number = str("XYZ".index(number[0])) + number[1:]
    return len(number) == 8 and _DNI_LETTERS[int(number) % 23] == letter


# -- phone numbers -----------------------------------------------------------------------
# International form ("+" and 8-15 digits with single spaces, dots, dashes or brackets
# between), and the North American forms "(555) 123-4567" and "555-123-4567". One digit
# per repetition: the separators and the digits are disjoint, so no backtracking.
PHONE_RE = re.compile(
    r"(?<![\w+])\+\d(?:[ .()-]{0,2}\d){7,14}(?!\d)"
    r"|(?<![\w(-])\(\d{3}\)[ ]?\d{3}-\d{4}(?![\w-])"
    r"|(?<![\w.-])\d{3}-\d{3}-\d{4}(?![\w-])"
)


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
    "slack.com",
    "discord.com",
    "office.com",
    "googleapis.com",
)


# Dotted names of code that end like a host.
_NOT_HOSTS = frozenset(("threading.local", "_thread._local", "asyncio.local"))


def is_public_host(host: str) -> bool:
    """Kept as written: public documentation hosts and dotted code names."""
    h = host.lower()
    return h in _NOT_HOSTS or any(h == p or h.endswith("." + p) for p in _PUBLIC_HOSTS)


# -- home directories: the user name only ----------------------------------------------
HOME_PATH = re.compile(
    r"(?P<root>(?<![\w.-])/(?:home|Users|export/home|var/home|usr/home)/"
    r"|(?<![A-Za-z])[A-Za-z]:(?:\\\\|\\|/)"
    r"(?:Users|Documents and Settings)(?:\\\\|\\|/))"
    r"(?P<name>[^\\/\s:\"'<>*?|]{1,64})(?=[\\/\s:\"'<>]|$)"
)
# "~alice/src" and "~alice": a user's home in shell notation ("~/" is nobody's name).
TILDE_HOME = re.compile(r"(?<![\w~$.-])~(?P<name>[A-Za-z_][\w.-]{1,31})(?=[/\\\s:\"'<>]|$)")
_SHARED_HOMES = frozenset(("shared", "public", "default", "all users", "default user"))


def is_personal_home(name: str) -> bool:
    return name.lower() not in _SHARED_HOMES


# -- the rest of a value the line break cut ---------------------------------------------
# A placeholder that ends a line, then, at the very start of the next line, a run of
# token characters: the tail of what the placeholder replaced, wrapped onto the next line.
CONTINUATION = re.compile(
    r"(?P<head><(?:secret|token|password|jwt|key)>\r?\n)(?P<run>[^\s\"'<>]{1,256})"
)
_RECORD_START = re.compile(r"\d{4}-\d\d-\d\d|\d\d:\d\d|[\[({#$>|]|(?:[A-Z][a-z]+|[A-Z]+)(?::|$)")


def is_continuation(run: str) -> bool:
    """The tail of a token, not the first word of the next line: random-looking (digits or
    symbols among the letters, or mixed case inside), and not how a log record starts."""
    if _RECORD_START.match(run) or run.endswith(":"):
        return False
    if any(c.isdigit() or c in "+/=_-&;%!#$*~.,)" for c in run):
        return True
    return any(c.isupper() for c in run[1:]) and any(c.islower() for c in run)
