#!/usr/bin/env python3
"""Ask a running knowledge-base server which known errors a log contains, from a CI job.

Needs only the Python standard library, so a CI step can run it with whatever ``python3``
the runner has, without the project installed. The server renders every format (the same
output as ``manage.py match --format``), so this client only posts and prints.

    python3 kb_match.py [FILE|-] [--url URL] [--format text|json|github|markdown]
                        [--annotate-file PATH] [--timeout SECONDS]

The log is posted whole as the request body, up to the server's log limit (the size its
``manage.py match`` reads); a gzip-compressed log (``build.log.gz``) is posted as it is and
the server reads it decompressed.

The base URL comes from ``--url``, else the ``KB_URL`` environment variable, else
http://127.0.0.1:8000. Exit status, for the step to branch on:

- 0: the log holds no known error (suggestions alone do not count);
- 1: known errors found;
- 2: usage error (a bad option, a file that cannot be read);
- 3: no answer from the server: unreachable, timed out, or it refused the request (too
  large for its limit, rate-limited, an error); the reason is printed on stderr.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import urllib.error
import urllib.parse
import urllib.request

NOTHING_KNOWN, KNOWN_FOUND, USAGE, NO_ANSWER = 0, 1, 2, 3
FORMATS = ("text", "json", "github", "markdown")
DEFAULT_URL = "http://127.0.0.1:8000"
GZIP_MAGIC = b"\x1f\x8b"


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="kb_match.py",
        description="Match a log against a knowledge-base server's known errors. "
        "Exit 0: none known; 1: known errors found; 2: usage error; 3: no answer.",
    )
    parser.add_argument("file", nargs="?", default="-", metavar="FILE", help="the log (- : stdin)")
    parser.add_argument("--url", default=os.environ.get("KB_URL", DEFAULT_URL), help="server")
    parser.add_argument("--format", choices=FORMATS, default="text")
    parser.add_argument(
        "--annotate-file",
        default=None,
        metavar="PATH",
        help="the file github annotations point at (default: FILE, unless stdin)",
    )
    parser.add_argument("--timeout", type=float, default=60.0, metavar="SECONDS")
    args = parser.parse_args(argv)  # exits 2 on a usage error
    if urllib.parse.urlsplit(args.url).scheme not in ("http", "https"):
        parser.error(f"--url must be an http:// or https:// address, not {args.url!r}")
    return args


def fail(code: int, message: str) -> int:
    print(f"kb_match: {message}", file=sys.stderr)
    return code


def refusal_detail(body: bytes) -> str:
    """The server's own words for a refusal (its JSON ``detail``), else the raw start."""
    try:
        data = json.loads(body)
    except ValueError:
        return body[:200].decode("utf-8", "replace").strip()
    if isinstance(data, dict) and isinstance(data.get("detail"), str):
        return data["detail"]
    return json.dumps(data)[:200]


def content_type(log: bytes) -> str:
    """What the log is, for the server: gzip by its magic bytes, else UTF-8 text."""
    return "application/gzip" if log[:2] == GZIP_MAGIC else "text/plain; charset=utf-8"


def main(argv: list[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    try:
        if args.file == "-":
            log = sys.stdin.buffer.read()
        else:
            with open(args.file, "rb") as fh:
                log = fh.read()
    except OSError as exc:
        return fail(USAGE, f"{args.file}: cannot read: {exc.strerror or exc}")
    annotate = args.annotate_file
    if annotate is None and args.file != "-":
        annotate = args.file
    query = {"format": args.format, **({"file": annotate} if annotate else {})}
    url = f"{args.url.rstrip('/')}/api/match?{urllib.parse.urlencode(query)}"
    request = urllib.request.Request(  # noqa: S310 - http(s) only, checked in parse_args
        url,
        data=log,
        method="POST",
        headers={"Content-Type": content_type(log), "Accept": "*/*"},
    )
    try:
        with urllib.request.urlopen(request, timeout=args.timeout) as response:  # noqa: S310
            body = response.read()
            known = response.headers.get("KB-Known-Errors")
    except urllib.error.HTTPError as exc:
        detail = refusal_detail(exc.read())
        if exc.code == 413:
            return fail(NO_ANSWER, f"the log is larger than the server accepts: {detail}")
        return fail(NO_ANSWER, f"the server refused the request (HTTP {exc.code}): {detail}")
    except (urllib.error.URLError, OSError) as exc:  # refused, unresolvable, timed out
        reason = getattr(exc, "reason", exc)
        return fail(NO_ANSWER, f"cannot reach {args.url}: {reason}")
    if known is None or not known.isdigit():
        return fail(NO_ANSWER, f"{args.url} did not answer as a knowledge-base server")
    sys.stdout.write(body.decode("utf-8", "replace"))
    if args.format == "json":
        sys.stdout.write("\n")
    sys.stdout.flush()
    return KNOWN_FOUND if int(known) else NOTHING_KNOWN


if __name__ == "__main__":
    sys.exit(main())
