"""A package index served over real HTTPS on loopback, for the tests of ``pypi:`` sources.

The index reader refuses anything but https, so the test index is HTTPS too: a
self-signed certificate made with ``openssl`` for ``localhost``, trusted through
``SSL_CERT_FILE`` (read by Python's default TLS context at each connection). The index
answers the simple API's JSON form (PEP 691) for one project and serves its files.
"""

from __future__ import annotations

import hashlib
import http.server
import json
import ssl
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

__all__ = ["https_index"]


@contextmanager
def https_index(folder: Path, project: str, files: dict[str, bytes]) -> Iterator[str]:
    """Serve ``files`` (file name -> bytes) as ``project``'s release files; yields the
    index's URL (``https://localhost:PORT/simple``). Set ``SSL_CERT_FILE`` to
    ``folder / "cert.pem"`` while it runs."""
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
         "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost",
         "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True,
    )  # fmt: skip
    listing = {
        "meta": {"api-version": "1.1"},
        "name": project,
        "files": [
            {
                "filename": name,
                "url": f"../../files/{name}",
                "hashes": {"sha256": hashlib.sha256(data).hexdigest()},
            }
            for name, data in files.items()
        ],
    }

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path == f"/simple/{project}/":
                body, kind = json.dumps(listing).encode(), "application/vnd.pypi.simple.v1+json"
            elif self.path.startswith("/files/") and self.path[7:] in files:
                body, kind = files[self.path[7:]], "application/octet-stream"
            else:
                self.send_error(404)
                return
            self.send_response(200)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"https://localhost:{server.server_address[1]}/simple"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
