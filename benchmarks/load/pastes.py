"""What the load test sends to ``POST /match/``: benign and hostile pastes, and their bodies.

The bodies are ``multipart/form-data`` exactly as a browser submits the paste form
(``templates/kb/paste.html``: ``hx-encoding="multipart/form-data"``): the hidden
``csrfmiddlewaretoken`` field, the ``text`` field, then the empty ``log`` file input
(``filename=""``, ``application/octet-stream``, no content). The boundary is fixed
(:data:`BOUNDARY`) so the wrk script can send the matching ``Content-Type`` header.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

PASTE_BYTES = 8 * 1024

#: Chrome's boundary shape (``----WebKitFormBoundary`` + 16 characters), fixed.
BOUNDARY = "----WebKitFormBoundaryKbLoadBench0001"
CONTENT_TYPE = f"multipart/form-data; boundary={BOUNDARY}"


def records(path: Path) -> list[dict[str, Any]]:
    out = []
    with path.open() as fh:
        for line in fh:
            obj = json.loads(line)
            out.append(obj.get("record", obj))
    return out


def benign_pastes(recs: list[dict[str, Any]], n: int = 16) -> list[str]:
    """8 KiB of ordinary log lines with one or two known error messages inside."""
    noise = [
        "2026-11-30T03:12:{s:02d}Z INFO  http  GET /api/v1/items/{i} 200 {ms}ms",
        "2026-11-30T03:12:{s:02d}Z DEBUG db    pool checkout conn={i} wait={ms}ms",
        "2026-11-30T03:12:{s:02d}Z WARN  cache miss key=user:{i}:profile ttl=300",
    ]
    messages = [r["errorMessage"] for r in recs if r.get("errorMessage")]
    pastes = []
    for k in range(n):
        lines, i = [], 0
        while sum(len(x) + 1 for x in lines) < PASTE_BYTES - 600:
            lines.append(noise[i % 3].format(s=i % 60, i=i * 7 + k, ms=(i * 13) % 250))
            i += 1
        lines.insert(len(lines) // 2, f"2026-11-30T03:12:44Z ERROR {messages[k % len(messages)]}")
        lines.append(f"2026-11-30T03:12:59Z ERROR {messages[(k * 31 + 7) % len(messages)]}")
        text = "\n".join(lines)
        pastes.append(text[:PASTE_BYTES])
    return pastes


def adversarial_pastes(max_bytes: int) -> list[str]:
    return [
        ("x" * 79 + "\n") * ((max_bytes - 1024) // 80),  # just under the paste limit
        "a" + " " * 20000 + "b\n" + "Error:" + " " * 20000 + "!",  # SO-2016 whitespace
        "x=" * 2500 + "\n" + ("=" * 5000),  # CF-2019 .*(?:.*=.*) bait
        "a" * 30 + "!" + "\n" + "a" * 5000 + "!",  # (a+)+$ bait
        "(" * 5000 + "[" * 5000 + "{" * 5000,  # nesting
        "\x1b[31m" * 3000 + "\r" * 3000 + "\u202e" * 1000,  # control and bidi soup
        ("ERROR " * 2000 + "\n") * 16,  # every line looks like an error
    ]


def multipart_body(text: str, token: str) -> bytes:
    """The paste form as a browser posts it: CSRF field, ``text``, then the empty ``log``."""
    if BOUNDARY in text:
        raise ValueError("the paste contains the multipart boundary")
    dash = f"--{BOUNDARY}\r\n"
    return (
        f"{dash}"
        'Content-Disposition: form-data; name="csrfmiddlewaretoken"\r\n\r\n'
        f"{token}\r\n"
        f"{dash}"
        'Content-Disposition: form-data; name="text"\r\n\r\n'
        f"{text}\r\n"
        f"{dash}"
        'Content-Disposition: form-data; name="log"; filename=""\r\n'
        "Content-Type: application/octet-stream\r\n\r\n"
        "\r\n"
        f"--{BOUNDARY}--\r\n"
    ).encode()


def write_bodies(folder: Path, pastes: list[str], token: str) -> Path:
    """``<n>.body`` files for the wrk script, one request body each."""
    folder.mkdir(parents=True, exist_ok=True)
    for n, text in enumerate(pastes):
        (folder / f"{n}.body").write_bytes(multipart_body(text, token))
    return folder
