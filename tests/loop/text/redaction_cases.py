"""The redaction tables: secret and personal-data shapes that must not survive, and real
error lines that must survive untouched. Data only; the tests are in test_redact.py.

Every value is made up. Provider tokens are built by `_fake` to the published format's
length (GitHub's secret scanning partner formats, gitleaks' rules), so no string here is
anyone's key and none looks like a real one to a scanner reading this file."""

from __future__ import annotations

import base64
from urllib.parse import quote

_ALNUM = "Q7xK2mP9vL4nR8sT3wY6zB1cD5fG0hJaEuMoNiTeVrWbXgYdZk"
_HEX = "0123456789abcdef"


def _fake(n: int, alphabet: str = _ALNUM, step: int = 7) -> str:
    """``n`` made-up characters of ``alphabet``: a fixed walk, the same on every run."""
    return "".join(alphabet[(i * step + i // len(alphabet)) % len(alphabet)] for i in range(n))


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


# (what it is, the text as pasted, the secret substring that must not survive, the
#  placeholder expected in its place)
SECRETS = [
    (
        "aws access key id",
        "boto: AKIAIOSFODNN7EXAMPLE is not authorised",
        "AKIAIOSFODNN7EXAMPLE",
        "<token>",
    ),
    (
        "aws session key id",
        "credentials ASIAY34FZKBOKMUTVV7A expired",
        "ASIAY34FZKBOKMUTVV7A",
        "<token>",
    ),
    (
        "aws secret key, named",
        "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "wJalrXUtnFEMI/K7MDENG",
        "<secret>",
    ),
    (
        "aws secret key, bare",
        "signing with wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY failed",
        "bPxRfiCYEXAMPLEKEY",
        "<secret>",
    ),
    (
        "github classic token",
        "remote: ghp_16C7e42F292c6912E7710c838347Ae178B4a denied",
        "ghp_16C7e42F292c6912E7710c838347Ae178B4a",
        "<token>",
    ),
    (
        "github oauth token",
        "token gho_16C7e42F292c6912E7710c838347Ae178B4a revoked",
        "gho_16C7e42F292c6912E7710c838347Ae178B4a",
        "<token>",
    ),
    (
        "github fine-grained",
        (
            "auth github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGH"
            "IJKLMNOPQ failed"
        ),
        "github_pat_11ABCDEFG",
        "<token>",
    ),
    (
        "gitlab token",
        "HTTP 401 for glpat-xxxxxxxxxxxxxxxxxxxx1 at push",
        "glpat-xxxxxxxxxxxxxxxxxxxx1",
        "<token>",
    ),
    (
        "slack bot token",
        "slack: invalid_auth xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx",
        "xoxb-123456789012",
        "<token>",
    ),
    (
        "slack user token",
        "using xoxp-123456789012-123456789012-123456789012-abcdef0123456789abcdef0123456789",
        "xoxp-123456789012",
        "<token>",
    ),
    (
        "stripe live key",
        (
            "stripe.error.AuthenticationError: Invalid API Key provided: sk_live_4eC39HqLyjWD"
            "arjtT1zdp7dc"
        ),
        "sk_live_4eC39HqLyjWDarjtT1zdp7dc",
        "<token>",
    ),
    (
        "stripe restricted key",
        "key rk_live_51H8s9fLkdIwHu7ixNdZqnT2 refused",
        "rk_live_51H8s9fLkdIwHu7ixNdZqnT2",
        "<token>",
    ),
    (
        "google api key",
        "API key not valid: AIzaSyDaGmWKa4JsXZ-HjGw7ISLn_3namBGewQe",
        "AIzaSyDaGmWKa4JsXZ-HjGw7ISLn_3namBGewQe",
        "<token>",
    ),
    (
        "openai key",
        (
            "openai.AuthenticationError: Incorrect API key provided: sk-proj-AbCdEf0123456789"
            "AbCdEf0123456789xyz"
        ),
        "sk-proj-AbCdEf0123456789",
        "<token>",
    ),
    (
        "openai legacy key",
        "using sk-AbCdEf0123456789AbCdEf0123456789AbCdEf012345",
        "sk-AbCdEf0123456789AbCdEf",
        "<token>",
    ),
    (
        "npm token",
        "npm ERR! 403 npm_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789",
        "npm_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789",
        "<token>",
    ),
    (
        "twilio api key sid",
        "twilio: SK2a0747eba6abf96b7e3c3ff0b4530f6e invalid",
        "SK2a0747eba6abf96b7e3c3ff0b4530f6e",
        "<token>",
    ),
    (
        "sendgrid key",
        "SendGrid 401 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",
        "SG.ngeVfQFYQlKU0ufo8x5d1A",
        "<token>",
    ),
    (
        "azure connection string",
        (
            "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=Eby8vdM02xNOcqFlqUwJP"
            "LlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==;EndpointSuff"
            "ix=core.windows.net"
        ),
        "Eby8vdM02xNOcqFlq",
        "<secret>",
    ),
    (
        "jwt",
        (
            "jwt.exceptions.ExpiredSignatureError for eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.ey"
            "JzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4ifQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_"
            "adQssw5c"
        ),
        "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c",
        "<jwt>",
    ),
    (
        "password in a url",
        "could not connect to postgres://app:S3cr3tPassw0rd@db.prod.acme-corp.com:5432/main",
        "S3cr3tPassw0rd",
        "<password>",
    ),
    ("user in a url", "could not connect to mysql://alice:pw123@10.0.4.7/shop", "alice", "<user>"),
    (
        "redis password, no user",
        "Error connecting to redis://:hunter2hunter2@cache:6379/0",
        "hunter2hunter2",
        "<password>",
    ),
    (
        "libpq dsn",
        "connection failed: host=db1 port=5432 user=app password=Tr0ub4dor&3x dbname=prod",
        "Tr0ub4dor",
        "<password>",
    ),
    (
        "env password",
        "MYSQL_ROOT_PASSWORD=changeme123 docker exited with 1",
        "changeme123",
        "<password>",
    ),
    (
        "yaml password",
        "config error near   password: correcthorsebattery",
        "correcthorsebattery",
        "<password>",
    ),
    ("passwd colon", "ldap bind: passwd: P4ssw0rd! rejected", "P4ssw0rd!", "<password>"),
    (
        "secret=",
        "OAuth error invalid_client client_secret=8f14e45fceea167a5a36dedd4bea2543",
        "8f14e45fceea167a5a36dedd4bea2543",
        "<secret>",
    ),
    (
        "token=",
        "GET /api/v1/items?token=a1b2c3d4e5f6g7h8i9j0 returned 403",
        "a1b2c3d4e5f6g7h8i9j0",
        "<token>",
    ),
    (
        "api_key=",
        (
            "requests.exceptions.HTTPError: 401 for url https://api.service.io/v2?api_key=ZXh"
            "hbXBsZWtleQ123&q=x"
        ),
        "ZXhhbXBsZWtleQ123",
        "<secret>",
    ),
    (
        "json password",
        'payload {"username": "svc", "password": "p@55 w0rd!"} rejected',
        "p@55 w0rd!",
        "<password>",
    ),
    (
        "python dict token",
        "KeyError in {'access_token': 'ya29.a0AfH6SMBx3', 'scope': 'x'}",
        "ya29.a0AfH6SMBx3",
        "<token>",
    ),
    (
        "bearer header",
        "Authorization: Bearer 0b79bab50daca910b000d4f1a2b675d604257e42",
        "0b79bab50daca910b000d4f1a2b675d604257e42",
        "<token>",
    ),
    (
        "bearer in prose",
        "request with Bearer abcDEF123456ghiJKL789 was rejected",
        "abcDEF123456ghiJKL789",
        "<token>",
    ),
    (
        "basic auth header",
        "Authorization: Basic YWxhZGRpbjpvcGVuc2VzYW1l",
        "YWxhZGRpbjpvcGVuc2VzYW1l",
        "<secret>",
    ),
    (
        "x-api-key header",
        "x-api-key: 3f9a7c1e-5b2d-4e8f-9a6c-1d2e3f4a5b6c",
        "3f9a7c1e-5b2d-4e8f",
        "<token>",
    ),
    (
        "rsa private key",
        (
            "key load failed:\n-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAx4UbaDzY5xj"
            "Q\nq9eK0xYw/+zVbq2Zk=\n-----END RSA PRIVATE KEY-----\nnext"
        ),
        "MIIEowIBAAKCAQEAx4UbaDzY5xjQ",
        "<key>",
    ),
    (
        "openssh private key, escaped in json",
        (
            '{"key": "-----BEGIN OPENSSH PRIVATE KEY-----\\nb3BlbnNzaC1rZXktdjEAAAAA\\n-----END'
            ' OPENSSH PRIVATE KEY-----"}'
        ),
        "b3BlbnNzaC1rZXktdjEAAAAA",
        "<key>",
    ),
    (
        "cookie header",
        "Cookie: sessionid=k2j3h4g5f6d7s8a9; csrftoken=Zx8Yw7Vu6",
        "k2j3h4g5f6d7s8a9",
        "<secret>",
    ),
    (
        "set-cookie header",
        "Set-Cookie: session=eyJ1c2VyIjoiYm9iIn0.ZqB3; HttpOnly",
        "eyJ1c2VyIjoiYm9iIn0",
        "<secret>",
    ),
    (
        "django sessionid",
        "SuspiciousOperation: sessionid=5p0s9q8r7t6u5v4w3x2y1z invalid",
        "5p0s9q8r7t6u5v4w3x2y1z",
        "<token>",
    ),
    (
        "jsessionid",
        "GET /app;JSESSIONID=8F3A2B1C9D0E4F5A6B7C8D9E0F1A2B3C 500",
        "8F3A2B1C9D0E4F5A6B7C8D9E0F1A2B3C",
        "<token>",
    ),
    (
        "visa card, spaces",
        "payment failed for card 4111 1111 1111 1111 (declined)",
        "4111 1111 1111 1111",
        "<card>",
    ),
    ("mastercard, dashes", "charge error: 5500-0000-0000-0004", "5500-0000-0000-0004", "<card>"),
    ("amex, bare", "card 378282246310005 expired", "378282246310005", "<card>"),
    (
        "email",
        "SMTPRecipientsRefused: {'alice.smith+billing@example-corp.co.uk': (550, 'no such user')}",
        "alice.smith+billing@example-corp.co.uk",
        "<email>",
    ),
    ("ipv4", "dial tcp 10.161.233.80:2379: connect: connection refused", "10.161.233.80", "<ip>"),
    (
        "ipv6",
        "listen tcp [2001:db8:85a3::8a2e:370:7334]:443: bind: address already in use",
        "2001:db8:85a3::8a2e:370:7334",
        "<ip>",
    ),
    (
        "ipv6 link-local with zone",
        "ping fe80::1ff:fe23:4567:890a%eth0 timed out",
        "fe80::1ff:fe23:4567:890a",
        "<ip>",
    ),
    (
        "internal fqdn",
        "could not resolve kafka-0.kafka-headless.prod.svc.cluster.local",
        "kafka-headless.prod",
        "<host>",
    ),
    (
        "company fqdn",
        "SSL: certificate verify failed for api.acme-corp.com",
        "acme-corp.com",
        "<host>",
    ),
    ("aws internal host", "timeout talking to ip-10-0-1-23.ec2.internal", "ip-10-0-1-23", "<host>"),
    ("home dir linux", 'File "/home/alice/src/app/models.py", line 42, in save', "alice", "<user>"),
    (
        "home dir mac",
        "PermissionError: [Errno 13] Permission denied: '/Users/bob/Library/app.db'",
        "bob",
        "<user>",
    ),
    (
        "home dir windows",
        "FileNotFoundError: C:\\Users\\carol\\AppData\\Local\\app\\cfg.ini",
        "carol",
        "<user>",
    ),
    (
        "home dir windows, escaped",
        '"path": "C:\\\\Users\\\\dave\\\\proj\\\\x.py"',
        "dave",
        "<user>",
    ),
    *[
        # -- the leaks of issue 22 ----------------------------------------------------------
        (
            "dsn password with '#' and '!'",
            "connect failed: postgres://svc:Aut0mn!Rain#77@db-7.corp.internal:5432/x",
            "Rain#77",
            "<password>",
        ),
        (
            "dsn user beside a '#' password",
            "connect failed: postgres://svc:Aut0mn!Rain#77@db-7.corp.internal:5432/x",
            "//svc",
            "<user>",
        ),
        ("password with '&'", "login password=Sn0wd0g&9y", "&9y", "<password>"),
        ("password with '&', then ';'", "login password=Sn0wd0g&9y; retry", "&9y", "<password>"),
        ("password with '&', then ','", "login password=Sn0wd0g&9y, retry", "&9y", "<password>"),
        ("password with '&', then ')'", "login (password=Sn0wd0g&9y) failed", "&9y", "<password>"),
        ("password with '&', then '\"'", 'dsn "password=Sn0wd0g&9y" bad', "&9y", "<password>"),
        ("password with '&', then space", "password=Sn0wd0g&9y dbname=x", "&9y", "<password>"),
        ("password with ';' inside", "password=Sn0wd0g;9yx host=db", ";9yx", "<password>"),
        (
            "query password before '&user='",
            "GET /login?password=Pl4nt&user=bob",
            "Pl4nt",
            "<password>",
        ),
        (
            "rust debug struct, short quoted password",
            'Config { host: "db", password: "Plum5tree" }',
            "Plum5tree",
            "<password>",
        ),
        ("yaml, short quoted password", "password: 'Plum5tree'", "Plum5tree", "<password>"),
        (
            "a pair where a kept value was",
            "invalid token: password: Hunt3r2x expired",
            "Hunt3r2x",
            "<password>",
        ),
        ("yaml, short double-quoted token", 'token: "Pl4m5tr33x"', "Pl4m5tr33x", "<token>"),
        (
            "redis password with '/' and '#'",
            "redis://:ab/cd#ef9@cache:6379/0",
            "cd#ef9",
            "<password>",
        ),
        ("url password with '@'", "amqp://guest:p@ss@rabbit:5672/", "p@ss", "<password>"),
        (
            "slack webhook",
            "POST https://hooks.slack.com/services/T0A1B2C3D/B0E4F5G6H/" + _fake(24) + " 404",
            "B0E4F5G6H",
            "<secret>",
        ),
        (
            "azure client secret",
            "AADSTS7000215: secret " + "Ab1" + "8Q~" + _fake(34) + " invalid",
            "8Q~" + _fake(8),
            "<token>",
        ),
        ("jcb card", "card 3530111333300000 declined", "3530111333300000", "<card>"),
        ("mysql -p", "$ mysql -uroot -pS3cretPw shop", "S3cretPw", "<password>"),
        (
            "mysqldump -p",
            "mysqldump -h db -u app -pHunt3r2 --all-databases",
            "Hunt3r2",
            "<password>",
        ),
        (
            "lowercase bearer header",
            "Authorization: bearer abcdefghijklmnopqrstuvwxyz",
            "abcdefghijklmnop",
            "<token>",
        ),
        (
            "lowercase bearer in prose",
            "sent bearer abcdefghijklmnopqrstuvwxyz and got 401",
            "abcdefghijklmnop",
            "<token>",
        ),
        (
            "docker json-file line, message is json",
            '{"log":"{\\"level\\":\\"error\\",\\"password\\":\\"Plum5tree\\"}\\n",'
            '"stream":"stderr"}',
            "Plum5tree",
            "<password>",
        ),
        (
            "json escaped twice",
            '{"log":"{\\"msg\\":\\"{\\\\\\"api_key\\\\\\":\\\\\\"' + _fake(20) + '\\\\\\"}\\"}"}',
            _fake(20),
            "<secret>",
        ),
        (
            "json escaped once, token name",
            '{\\"access_token\\": \\"' + _fake(24) + '\\"}',
            _fake(24),
            "<token>",
        ),
        (
            "base64 of key=value",
            "payload " + _b64("password=Sn0wd0g&9y") + " rejected",
            _b64("password=Sn0wd0g&9y")[:12],
            "<secret>",
        ),
        (
            "base64 of a token",
            "header " + _b64("ghp_" + _fake(36)) + " refused",
            _b64("ghp_" + _fake(36))[:12],
            "<secret>",
        ),
        (
            "url-safe base64 of a bearer header",
            "ctx="
            + base64.urlsafe_b64encode(b"Authorization: Bearer Zz9-" + _fake(30).encode())
            .decode()
            .rstrip("="),
            base64.urlsafe_b64encode(b"Authorization: Bearer Zz9-").decode()[:12],
            "<secret>",
        ),
        (
            "url-encoded token in a url",
            "GET https://app.example.io/cb?next="
            + quote("/x?access_token=a1B2c3D4e5F6g7H8&y=1", safe="")
            + " 302",
            "a1B2c3D4e5F6g7H8",
            "<token>",
        ),
        (
            "url-encoded dsn password",
            "dsn=postgres://app:p%40ss%23W0rd9@db:5432/x",
            "ss%23W0rd9",
            "<password>",
        ),
        (
            "dsn password with an encoded line break",
            "postgres://svc:Wint3r!%0Agate9@db-7.corp.internal:5432/x",
            "Wint3r",
            "<password>",
        ),
        (
            "token split across two lines",
            "ERROR push refused ghp_" + _fake(20) + "\n" + _fake(16, step=11) + " at remote",
            _fake(16, step=11),
            "<token>",
        ),
        (
            "password split across two lines",
            "dsn host=db password=Sn0wd0g\n&9yWq2 dbname=x",
            "&9yWq2",
            "<password>",
        ),
        (
            "bearer split across two lines",
            "Authorization: Bearer " + _fake(40) + "\n" + _fake(20, step=13),
            _fake(20, step=13),
            "<token>",
        ),
        # -- personal data ----------------------------------------------------------------
        ("phone, international", "SMS to +44 20 7946 0958 failed", "7946 0958", "<phone>"),
        ("phone, e.164", "twilio: +14155550123 is not a valid number", "4155550123", "<phone>"),
        ("phone, north american", "callback (555) 010-4477 busy", "010-4477", "<phone>"),
        ("phone, named", "user.phone=0301234567 rejected", "0301234567", "<phone>"),
        ("us ssn", "ssn 123-45-6789 on file", "123-45-6789", "<national-id>"),
        ("uk ni number", "NINO AB 12 34 56 C mismatch", "12 34 56", "<national-id>"),
        ("spanish dni", "dni 12345678Z invalid", "12345678Z", "<national-id>"),
        ("national id, named", "national_id=8801015555 exists", "8801015555", "<national-id>"),
        ("iban, grouped", "SEPA: GB82 WEST 1234 5698 7654 32 rejected", "5698 7654", "<iban>"),
        ("iban, bare", "iban DE89370400440532013000 unknown", "DE89370400440532013000", "<iban>"),
        ("home dir silverblue", "open /var/home/erin/.config/app.toml", "erin", "<user>"),
        ("tilde home", "cannot read ~frank/projects/app/.env", "frank", "<user>"),
        # -- command lines ----------------------------------------------------------------
        ("--password flag", "app --password hunter2x --verbose", "hunter2x", "<password>"),
        ("--token flag, quoted", "cli --token 'Ab3 Cd4 Ef5' run", "Ab3 Cd4", "<token>"),
        ("sshpass -p", "sshpass -p S3cr3tSsh ssh deploy@10.0.0.5", "S3cr3tSsh", "<password>"),
        ("docker login -p", "docker login -u me -p Dck3rPw0 reg.io", "Dck3rPw0", "<password>"),
        # -- names of secrets -------------------------------------------------------------
        (
            "datadog api key",
            "DD_API_KEY=" + _fake(32, _HEX) + " invalid",
            _fake(32, _HEX),
            "<secret>",
        ),
        (
            "datadog app key",
            "DD_APP_KEY=" + _fake(40, _HEX) + " invalid",
            _fake(40, _HEX),
            "<secret>",
        ),
        (
            "twilio auth token, named",
            "TWILIO_AUTH_TOKEN=" + _fake(32, _HEX, 5),
            _fake(32, _HEX, 5),
            "<token>",
        ),
        ("aws session token, named", "aws_session_token=" + _fake(60), _fake(60), "<token>"),
        (
            "gcp service account key id",
            '{"type": "service_account", "private_key_id": "' + _fake(40, _HEX) + '"}',
            _fake(40, _HEX),
            "<secret>",
        ),
        (
            "azure sas signature",
            "GET https://acct.blob.core.windows.net/c/b?sv=2022-11-02&sig=" + _fake(43) + "%3D",
            _fake(43),
            "<secret>",
        ),
        (
            "sentry dsn key",
            "sentry_sdk: https://" + _fake(32, _HEX) + "@o4501.ingest.sentry.io/4502",
            _fake(32, _HEX),
            "<secret>",
        ),
        (
            "discord webhook",
            "POST https://discord.com/api/webhooks/112233445566778899/" + _fake(68),
            _fake(68),
            "<secret>",
        ),
        (
            "teams webhook",
            "POST https://acme.webhook.office.com/webhookb2/" + _fake(36) + "/IncomingWebhook/x",
            _fake(36),
            "<secret>",
        ),
        (
            "ec private key",
            "-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEI"
            + _fake(40)
            + "\n-----END EC PRIVATE KEY-----",
            _fake(40),
            "<key>",
        ),
        (
            "pgp private key block",
            "-----BEGIN PGP PRIVATE KEY BLOCK-----\n\nlQOYBF" + _fake(40) + "\n",
            _fake(40),
            "<key>",
        ),
        (
            "encrypted private key",
            "-----BEGIN ENCRYPTED PRIVATE KEY-----\nMIIFHDBO" + _fake(40) + "\n-----END",
            _fake(40),
            "<key>",
        ),
    ],
    # -- provider token formats (prefix and body length as published) ---------------------
    *[
        (f"provider {name}", f"request failed with {token} (401)", token, "<token>")
        for name, token in [
            ("aws a3t key id", "A3TX" + _fake(16, "ABCDEFGHJKLMNPQRSTUVWXYZ234567")),
            ("aws role key id", "AROA" + _fake(16, "ABCDEFGHJKLMNPQRSTUVWXYZ234567")),
            ("github user-to-server", "ghu_" + _fake(36)),
            ("github server-to-server", "ghs_" + _fake(36)),
            ("github refresh", "ghr_" + _fake(36)),
            ("github fine-grained, full length", "github_pat_" + _fake(82)),
            ("gitlab deploy token", "gldt-" + _fake(20)),
            ("gitlab runner token", "glrt-" + _fake(20)),
            ("gitlab pipeline trigger", "glptt-" + _fake(40, _HEX)),
            ("gitlab routable pat", "glpat-" + _fake(27) + ".01" + _fake(7, _HEX)),
            ("gitlab runner registration", "GR1348941" + _fake(20)),
            ("gitlab feed token", "glft-" + _fake(20)),
            ("slack app-level", "xapp-1-A0" + _fake(9) + "-1234567890123-" + _fake(64, _HEX)),
            ("slack legacy workspace", "xoxa-2-" + _fake(40)),
            ("slack config", "xoxe.xoxp-1-" + _fake(163)),
            ("stripe webhook secret", "whsec_" + _fake(32)),
            ("stripe test key", "sk_test_" + _fake(24)),
            ("stripe prod restricted", "rk_prod_" + _fake(24)),
            ("google oauth access", "ya29." + _fake(60)),
            ("google oauth refresh", "1//0" + _fake(60)),
            ("google oauth client secret", "GOCSPX-" + _fake(28)),
            ("anthropic key", "sk-ant-api03-" + _fake(93) + "AA"),
            ("openai service account", "sk-svcacct-" + _fake(58) + "T3BlbkFJ" + _fake(58)),
            ("npm lowercase", "npm_" + _fake(36, "abcdefghijklmnopqrstuvwxyz0123456789")),
            ("pypi", "pypi-AgEIcHlwaS5vcmc" + _fake(70)),
            ("docker hub pat", "dckr_pat_" + _fake(27)),
            ("docker hub org token", "dckr_oat_" + _fake(32)),
            ("heroku v2", "HRKU-AA" + _fake(58)),
            ("shopify access", "shpat_" + _fake(32, _HEX)),
            ("shopify shared secret", "shpss_" + _fake(32, _HEX)),
            ("hugging face", "hf_" + _fake(34)),
            ("hugging face org", "api_org_" + _fake(34)),
            ("digitalocean pat", "dop_v1_" + _fake(64, _HEX)),
            ("digitalocean oauth", "doo_v1_" + _fake(64, _HEX)),
            ("databricks", "dapi" + _fake(32, _HEX)),
            ("linear", "lin_api_" + _fake(40)),
            ("atlassian", "ATATT3" + _fake(186)),
            ("new relic user key", "NRAK-" + _fake(27, "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")),
            ("postman", "PMAK-" + _fake(24, _HEX) + "-" + _fake(34, _HEX)),
            ("pulumi", "pul-" + _fake(40, _HEX)),
            ("vault service token", "hvs." + _fake(100)),
            ("terraform cloud", _fake(14) + ".atlasv1." + _fake(64)),
            ("grafana cloud", "glc_" + _fake(48)),
            ("grafana service account", "glsa_" + _fake(32) + "_" + _fake(8, _HEX)),
            ("sentry user token", "sntryu_" + _fake(64, _HEX)),
            ("square access", "sq0atp-" + _fake(22)),
            ("mailgun", "key-" + _fake(32, _HEX)),
            ("mailchimp", _fake(32, _HEX) + "-us14"),
            ("telegram bot", "123456789:AA" + _fake(33)),
            ("age secret key", "AGE-SECRET-KEY-1" + _fake(58, "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L")),
            ("doppler", "dp.pt." + _fake(43)),
            ("dynatrace", "dt0c01." + _fake(24) + "." + _fake(64)),
            ("easypost", "EZAK" + _fake(54)),
            ("fly.io", "fo1_" + _fake(43)),
            ("notion", "ntn_" + "12345678901" + _fake(35)),
            ("perplexity", "pplx-" + _fake(48)),
            ("planetscale password", "pscale_pw_" + _fake(43)),
            ("prefect", "pnu_" + _fake(36)),
            ("rubygems", "rubygems_" + _fake(48, _HEX)),
            ("brevo", "xkeysib-" + _fake(64, _HEX) + "-" + _fake(16)),
            ("shippo", "shippo_live_" + _fake(40, _HEX)),
            ("openshift", "sha256~" + _fake(43)),
            ("artifactory", "AKCp" + _fake(69)),
            ("alibaba", "LTAI" + _fake(20)),
            ("supabase", "sbp_" + _fake(40, _HEX)),
            ("groq", "gsk_" + _fake(52)),
            ("replicate", "r8_" + _fake(37)),
            ("discord bot", "MT" + _fake(22) + "." + _fake(6) + "." + _fake(27)),
        ]
    ],
]


# Real error lines (from the public labelled pastes and the dataset's messages): redaction
# must leave them exactly as they are.
UNTOUCHED = [
    (
        "org.apache.kafka.common.errors.TimeoutException: Topic orders not present in metadat"
        "a after 60000 ms."
    ),
    "java.lang.IllegalStateException: Cannot perform operation after producer has been closed",
    "psycopg2.OperationalError: could not connect to server: Connection refused",
    'django.db.utils.ProgrammingError: column "email_verified" does not exist',
    (
        "django.core.exceptions.ImproperlyConfigured: Requested setting INSTALLED_APPS, but s"
        "ettings are not configured."
    ),
    (
        "django.urls.exceptions.NoReverseMatch: Reverse for 'item-list' not found. 'item-list"
        "' is not a valid view function or pattern name."
    ),
    (
        "sqlalchemy.exc.MissingGreenlet: greenlet_spawn has not been called; can't call await"
        "_only() here."
    ),
    (
        "sqlalchemy.exc.NoReferencedTableError: Foreign key associated with column 'orders.cu"
        "stomer_id' could not find table 'customers'"
    ),
    (
        "Parent instance <User at 0x7f0c42b64f50> is not bound to a Session; lazy load operat"
        "ion of attribute 'addresses' cannot proceed"
    ),
    (
        "Textual SQL expression 'CREATE EXTENSION IF NOT E...' should be explicitly declared "
        "as text('CREATE EXTENSION IF NOT E...')"
    ),
    (
        "QueuePool limit of size 5 overflow 10 reached, connection timed out, timeout 30.00 ("
        "Background on this error at: https://sqlalche.me/e/20/3o7r)"
    ),
    "etcdserver: mvcc: database space exceeded",
    "rafthttp: health check for peer 684f2e4032b4dcc2 could not connect: dial tcp: i/o timeout",
    "etcdserver: apply entries took too long [104.2239ms for 1 entries]",
    "Catalog error: table or source not found: pg_stat_user_tables",
    "Failed to bind expression: s.cache_size",
    "Item not found: Invalid column: dattablespace.",
    "Sink error: Remote sink error: INTERNAL: Error when exec 22001, message Data truncation",
    (
        "Failed to connect to meta server 127.0.0.1:5690, trying again error=transport error:"
        " invalid URL, scheme is missing"
    ),
    "thread 'main' panicked at src/stream/src/executor/mod.rs:40:5:",
    "panic: runtime error: invalid memory address or nil pointer dereference",
    "Unexpected token: ')'",
    "sql parser error: Expected an expression:, found: EOF",
    "Failed to set TCP keep-alive extended options, falling back to basic keep-alive only",
    "Basic authentication failed for user",
    "Superuser must have is_superuser=True.",
    "For synchronize_session='fetch', can't mix multiple backends where some support RETURNING",
    "Consumers with version earlier than 0.10.1.0 may need to increase their fetch sizes.",
    "logger.info raised while threading.local was torn down",
    "KeyError: 'Posts'",
    "sqlite3.OperationalError: database is locked",
    (
        "ResourceWarning: <aiosqlite.core.Connection object at 0x7f3d9a139550> was deleted be"
        "fore being closed"
    ),
    "FATAL: must be superuser or replication role to start walsender",
    "Instance '<User at 0x7f85ff85e850>' has been deleted, or its row is otherwise not present.",
    "Method 'close()' can't be called here; method '_connection_for_bind()' is already in progress",
    "See https://docs.djangoproject.com/en/6.1/ref/settings/#allowed-hosts",
    (
        "io.netty.channel.AbstractChannel$AnnotatedConnectException: Connection refused: loca"
        "lhost/127.0.0.1:9092"
    ),
    "invalid token: expired",
]
