"""The redaction tables: secret and personal-data shapes that must not survive, and real
error lines that must survive untouched. Data only; the tests are in test_redact.py."""

from __future__ import annotations

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
