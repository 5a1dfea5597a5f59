"""CI-ready output: ``manage.py match --format``, its exit codes, ``POST /api/match?format=``
and the standard-library client ``contrib/kb_match.py`` against a live server.

Exit codes are read from real processes (``call_command`` never exits); the client runs
with ``python -I -S`` (no site-packages, no project on the path) to prove it needs only the
standard library.
"""

from __future__ import annotations

import gzip
import io
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from django.test import Client

from kb.matching.formats import render
from kb.matching.formats.github import MAX_ANNOTATIONS
from tests.ci_logs import ci_log
from tests.factories import FIXTURES, SEED, import_lines
from tests.servers import ROOT, Gunicorn, app_env, free_port
from tests.test_report_formats import parse_commands

SEED_ID = "c36bebe8cdedec02"
SEED_LINE = (
    "2026-11-30T03:00:00Z ERROR Backfill progress for vnode 17 not found, "
    "backfill_state not initialized properly"
)
LOG = f"starting\n{SEED_LINE}\nretrying\n{SEED_LINE.replace('17', '18')}\n"
CLEAN = "all good\nnothing to see here\n"
CLIENT = ROOT / "contrib" / "kb_match.py"


@pytest.fixture
def seed() -> None:
    assert import_lines(SEED).rejected == 0


@pytest.fixture
def logs(tmp_path: Path) -> dict[str, Path]:
    paths = {"known": tmp_path / "ci, run.log", "clean": tmp_path / "clean.log"}
    paths["known"].write_text(LOG)
    paths["clean"].write_text(CLEAN)
    return paths


def run_command(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """``manage.py match`` in a real process, on the test database."""
    return subprocess.run(
        [sys.executable, "manage.py", "match", *args],
        cwd=ROOT,
        env=app_env(**env),
        capture_output=True,
        text=True,
        timeout=120,
    )


# --- manage.py match --------------------------------------------------------------------------


@pytest.mark.django_db
@pytest.mark.usefixtures("seed")
def test_command_markdown_links_the_record_and_shows_its_first_step(
    logs: dict[str, Path],
) -> None:
    out = io.StringIO()
    call_command(
        "match", str(logs["known"]), "--format", "markdown", "--base-url", "https://kb.test/",
        stdout=out,
    )  # fmt: skip
    text = out.getvalue()
    assert text.startswith("### 1 known error in this log")
    assert f"(https://kb.test/records/{SEED_ID}/)" in text
    assert f"   - Line 2: `{SEED_LINE}`" in text
    first_step = SEED["record"]["solutions"][0]
    assert first_step.split()[0] in text.split("First thing to try: ")[1]


@pytest.mark.django_db
@pytest.mark.usefixtures("seed")
def test_command_github_annotates_the_log_file_given(logs: dict[str, Path]) -> None:
    out = io.StringIO()
    call_command("match", str(logs["known"]), "--format", "github", stdout=out)
    commands = parse_commands(out.getvalue())
    assert [c[0] for c in commands] == ["error", "notice"]
    assert commands[0][1]["file"] == str(logs["known"])
    assert commands[0][1]["line"] == "2"
    assert commands[0][2].startswith("Backfill progress for vnode 17 not found")
    out = io.StringIO()
    call_command("match", str(logs["known"]), "--format", "github", "--annotate-file", "a/b.log",
                 stdout=out)  # fmt: skip
    assert parse_commands(out.getvalue())[0][1]["file"] == "a/b.log"


@pytest.mark.django_db
def test_command_json_alias_and_a_conflicting_format_is_a_usage_error(
    logs: dict[str, Path],
) -> None:
    with pytest.raises(CommandError, match="two choices") as raised:
        call_command("match", str(logs["clean"]), "--json", "--format", "markdown")
    assert raised.value.returncode == 2
    with pytest.raises(CommandError, match="cannot read") as raised:
        call_command("match", str(logs["clean"].with_name("missing.log")))
    assert raised.value.returncode == 2


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("seed")
def test_command_exit_codes_from_a_real_process(logs: dict[str, Path], tmp_path: Path) -> None:
    known = run_command(str(logs["known"]), "--format", "json")
    assert known.returncode == 1, known.stderr
    assert '"record_id": "c36bebe8cdedec02"' in known.stdout
    # the contract's spelling keeps its status: a run that matched exits 0, same output
    legacy = run_command(str(logs["known"]), "--json")
    assert legacy.returncode == 0, legacy.stderr
    same = [
        {k: v for k, v in json.loads(r.stdout).items() if k != "elapsed_ms"}
        for r in (legacy, known)
    ]
    assert same[0] == same[1]
    clean = run_command(str(logs["clean"]), "--format", "github")
    assert clean.returncode == 0, clean.stderr
    assert parse_commands(clean.stdout) == [
        ("notice", {"title": "Known errors"}, "No known error found.")
    ]
    usage = [
        run_command(str(tmp_path / "missing.log")),
        run_command(str(logs["known"]), "--format", "yaml"),
        run_command(str(logs["known"]), "--max-bytes", "10"),
    ]
    assert [u.returncode for u in usage] == [2, 2, 2], [u.stderr for u in usage]
    assert "cannot read" in usage[0].stderr
    assert "invalid choice" in usage[1].stderr
    broken = run_command(str(logs["known"]), DATABASE_URL=f"sqlite:///{tmp_path / 'empty.db'}")
    assert broken.returncode == 3, broken.stderr
    assert "cannot read the records" in broken.stderr


# --- POST /api/match?format= ------------------------------------------------------------------


@pytest.mark.django_db
@pytest.mark.usefixtures("seed")
def test_api_renders_the_formats_as_plain_text_with_the_known_count(client: Client) -> None:
    def post(query: str, text: str = LOG) -> object:
        return client.post(f"/api/match{query}", text, content_type="text/plain")

    as_json = post("")
    assert as_json["Content-Type"].startswith("application/json")
    assert as_json["KB-Known-Errors"] == "1"
    github = post("?format=github&file=ci/run.log")
    assert github["Content-Type"] == "text/plain; charset=utf-8"
    assert github["Cache-Control"].startswith("no-store") or "no-store" in github["Cache-Control"]
    commands = parse_commands(github.content.decode())
    assert commands[0][1] == {
        "file": "ci/run.log",
        "line": "2",
        "title": "Backfill progress for vnode {:#?} not found, backfill_state not "
        "initialized properly",
    }
    assert f"Record: http://testserver/records/{SEED_ID}/" in commands[0][2]
    markdown = post("?format=markdown")
    assert f"](http://testserver/records/{SEED_ID}/)" in markdown.content.decode()
    clean = post("?format=text", CLEAN)
    assert (clean["KB-Known-Errors"], clean.content.decode().splitlines()[0]) == (
        "0",
        "No known error found.",
    )
    assert post("?format=yaml").status_code == 422


@pytest.mark.django_db
def test_openapi_documents_the_format_parameter_and_the_text_answer(client: Client) -> None:
    op = client.get("/api/openapi.json").json()["paths"]["/api/match"]["post"]
    params = {p["name"]: p for p in op["parameters"]}
    assert re.fullmatch(params["format"]["schema"]["pattern"], "markdown")
    assert not re.fullmatch(params["format"]["schema"]["pattern"], "yaml")
    ok = op["responses"]["200"]
    assert set(ok["content"]) == {"application/json", "text/plain"}
    assert "KB-Known-Errors" in ok["headers"]


# --- contrib/kb_match.py ------------------------------------------------------------------------


def run_client(*args: str, stdin: str | None = None, **env: str) -> subprocess.CompletedProcess:
    """``contrib/kb_match.py`` as a CI step runs it: no site-packages, no project."""
    clean_env = {"PATH": "/usr/bin:/bin", **env}  # no PYTHONPATH, no virtualenv
    return subprocess.run(
        [sys.executable, "-I", "-S", str(CLIENT), *args],
        input=stdin,
        env=clean_env,
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("seed")
def test_client_against_a_live_server(logs: dict[str, Path], tmp_path: Path) -> None:
    big = tmp_path / "big.log"
    big.write_text("x" * 2048 + "\n")
    limits = {"KB_MAX_PASTE_BYTES": "1024", "DATA_UPLOAD_MAX_MEMORY_SIZE": "1024"}
    with Gunicorn(workers=1, KB_MAX_LOG_BYTES="1024", **limits) as s:
        known = run_client(str(logs["known"]), "--url", s.base, "--format", "github")
        assert known.returncode == 1, known.stderr
        commands = parse_commands(known.stdout)
        assert commands[0][0] == "error"
        assert commands[0][1]["file"] == str(logs["known"])  # a name with ", " survives
        assert f"Record: {s.base}/records/{SEED_ID}/" in commands[0][2]

        piped = run_client("--format", "markdown", stdin=LOG, KB_URL=s.base)  # URL from env
        assert piped.returncode == 1, piped.stderr
        assert piped.stdout.startswith("### 1 known error in this log")

        clean = run_client(str(logs["clean"]), "--url", s.base, "--format", "json")
        assert clean.returncode == 0, clean.stderr
        assert '"matches": []' in clean.stdout

        too_big = run_client(str(big), "--url", s.base)
        assert too_big.returncode == 3
        assert "larger than the server accepts" in too_big.stderr
        assert too_big.stdout == ""


def test_client_exit_codes_without_a_server(tmp_path: Path) -> None:
    unreachable = run_client("--url", f"http://127.0.0.1:{free_port()}", stdin="x")
    assert unreachable.returncode == 3
    assert "cannot reach" in unreachable.stderr
    missing = run_client(str(tmp_path / "missing.log"))
    assert (missing.returncode, "cannot read" in missing.stderr) == (2, True)
    bad = run_client("--format", "yaml", stdin="x")
    assert bad.returncode == 2
    not_http = run_client("--url", "file:///etc/passwd", stdin="x")
    assert not_http.returncode == 2
    assert "http:// or https://" in not_http.stderr


def _answer(stdout: str) -> dict[str, object]:
    """A JSON answer without its timing, the one part two runs need not share."""
    return {k: v for k, v in json.loads(stdout).items() if k != "elapsed_ms"}


@pytest.mark.django_db(transaction=True)
def test_client_posts_a_whole_ci_log_and_a_gzipped_one(tmp_path: Path) -> None:
    """A 5 MB CI log, plain and gzipped, gets from a live server through the
    standard-library client exactly what ``manage.py match`` prints for the same file."""
    demo = (FIXTURES / "demo-records.jsonl").read_bytes().splitlines(keepends=True)
    assert import_lines(*demo).rejected == 0
    text = ci_log(5 * 1024 * 1024)
    assert len(text.encode()) > 5 * 1024 * 1024
    plain = tmp_path / "build.log"
    plain.write_text(text)
    packed = tmp_path / "build.log.gz"
    packed.write_bytes(gzip.compress(text.encode()))
    with Gunicorn(workers=1) as server:
        for log in (plain, packed):
            for fmt in ("json", "github"):
                sent = run_client(str(log), "--url", server.base, "--format", fmt)
                local = run_command(str(log), "--format", fmt)
                assert (sent.returncode, local.returncode) == (1, 1), sent.stderr + local.stderr
                if fmt == "json":
                    answer = _answer(sent.stdout)
                    assert answer == _answer(local.stdout)
                    found = {m["record_id"] for m in answer["matches"]}  # type: ignore[attr-defined]
                    assert {"5bb0a683fec77e9e", "fe7f836f23ff8f06"} <= found
                else:  # the same annotations, line for line (links differ only by host)
                    sent_commands = parse_commands(sent.stdout.replace(server.base, ""))
                    assert sent_commands == parse_commands(local.stdout)


def test_github_annotates_at_most_ten_errors_and_names_the_rest() -> None:
    """GitHub shows ten annotations per step: the ten that come first in the summary's order
    (root cause first) are annotated; the closing notice names every other one."""
    n = MAX_ANNOTATIONS + 4
    matches = [
        {"record_id": f"r{i}", "slug": f"error-{i}", "repo": "apache/kafka", "line": 10 * i + 1,
         "span": [0, 5], "text": f"error {i}", "captures": [], "score": 1.0}
        for i in range(n)
    ]  # fmt: skip
    # The groups' order (root cause first) is the reverse of the matches' order here.
    groups = [
        {"record_id": f"r{i}", "count": 2, "first_line": 10 * i + 1, "last_line": 10 * i + 5}
        for i in reversed(range(n))
    ]
    suggestions = [
        {"record_id": f"s{i}", "slug": f"maybe-{i}", "similarity": 0.8, "reason": "similar"}
        for i in range(MAX_ANNOTATIONS + 2)
    ]
    data = {"matches": matches, "groups": groups, "suggestions": suggestions, "records": {}}
    commands = parse_commands(render("github", data, file="build.log"))
    errors = [c for c in commands if c[0] == "error"]
    assert [c[1]["line"] for c in errors] == [str(10 * i + 1) for i in reversed(range(4, n))]
    assert len([c for c in commands if c[0] == "warning"]) == MAX_ANNOTATIONS
    notice = commands[-1]
    assert notice[0] == "notice"
    assert notice[2].startswith(f"{n} known errors found ({2 * n} occurrences)")
    for i in range(4):  # the four not annotated, each named with where it was seen
        assert f"error-{i} (seen 2 times, lines {10 * i + 1}-{10 * i + 5})" in notice[2]
    assert "error-4 " not in notice[2]
