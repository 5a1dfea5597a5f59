"""A curator learns a codebase in a real browser (issue 25): logs into the admin, adds a
source (a git repository built in the test, with a GitHub ``origin`` remote, never the
network), presses **Learn now**; the request only queues the job, whose page shows it
waiting, then its progress and result once a real ``manage.py db_worker`` process (the
database task backend, as in production) has learned the repository, while the site's
pages keep answering. A traceback pasted afterwards matches the learned record: its card
shows it, and the record page shows the snippet with the raising line marked, the link at
the commit, what the code says, and "Learned from ... at ...". No console errors or CSP
violations on any page."""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path
from typing import Any

import pytest

from kb.records.models import ErrorRecord
from kb.sources.models import LearnJob, Source
from tests.browser.conftest import assert_clean, screenshot, watch
from tests.curation_support import make_curator
from tests.servers import db_worker
from tests.sources.support import GitRepo

PASSWORD = "correct-horse-battery"
MESSAGE = "widget %(name)s failed with code %(code)d"
MODULES = 60  # files besides the one the paste is about: the worker has something to read
BILLING = '''"""Billing."""


def describe():
    return "billing"


def charge(name, code):
    if code > 9:
        raise RuntimeError(
            "widget %(name)s failed with code %(code)d"
            % {"name": name, "code": code}
        )
    return code
'''
LINE = 10  # where the raise starts
WINDOW_END = BILLING.count("\n") + 1  # the snippet: the whole file, its last (empty) line too
TRACEBACK = """Traceback (most recent call last):
  File "/srv/app/main.py", line 12, in <module>
    charge("sprocket", 42)
  File "/srv/app/widgets/billing.py", line 10, in charge
    raise RuntimeError(
RuntimeError: widget sprocket failed with code 42
"""


@pytest.fixture
def repository(tmp_path: Path) -> tuple[GitRepo, str]:
    repo = GitRepo(tmp_path / "widgets")
    repo.git("remote", "add", "origin", "https://github.com/acme/widgets.git")
    repo.write("widgets/billing.py", "def charge(name, code):\n    return code\n")
    repo.commit("first", tag="v0.1")
    for n in range(MODULES):
        repo.write(
            f"widgets/part{n}.py", f'def part():\n    raise ValueError("widget part {n} is bent")\n'
        )
    repo.write("widgets/billing.py", BILLING)
    return repo, repo.commit("billing", tag="v0.2")


@pytest.fixture
def worker_backend(settings: Any) -> None:
    """Learn now hands the job to the database backend, as in production; the browser
    tests' default (the immediate backend) would learn inside the request."""
    settings.TASKS = {"default": {"BACKEND": "django_tasks_db.DatabaseBackend"}}
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)


def test_a_curator_adds_a_source_learns_it_in_the_worker_and_a_paste_matches_it(
    page: Any,
    browser: Any,
    live_server: Any,
    transactional_db: None,
    worker_backend: None,
    repository: tuple[GitRepo, str],
) -> None:
    repo, head = repository
    base = live_server.url
    make_curator(password=PASSWORD)
    curator = watch(browser.new_context().new_page())
    curator.goto(f"{base}/admin/login/?next=/admin/")
    curator.fill("#id_username", "curator")
    curator.fill("#id_password", PASSWORD)
    curator.click("input[type=submit]")
    curator.wait_for_selector("#site-name")

    # Add the source: its location only; the repository name and the link come from it.
    curator.goto(f"{base}/admin/sources/source/add/")
    curator.fill("#id_location", str(repo.path))
    curator.click("input[name=_continue]")
    curator.wait_for_selector(".messagelist .success")
    source = Source.objects.get()
    assert (source.repo, source.kind, source.state) == ("local/widgets", "git", "new")

    # Learn now: the request only queues; the job page says it waits for a worker.
    curator.get_by_role("button", name="Learn now").click()
    progress = curator.locator("#job-progress")
    progress.wait_for()
    assert "Queued" in progress.inner_text()
    assert "Waiting for a task worker" in progress.inner_text()
    job = LearnJob.objects.get()
    assert (job.state, job.source_id) == (LearnJob.State.QUEUED, source.pk)
    screenshot(curator, "sources-job-queued")
    # The site answers, and nothing is learned yet: the paste matches nothing.
    page.goto(base + "/")
    page.fill("#paste-text", TRACEBACK)
    page.locator("#results .results-summary").wait_for(timeout=10_000)
    assert page.locator("#results article.match-card").count() == 0

    worker = db_worker()
    try:
        answered = 0
        while progress.get_attribute("class") != "kb-job kb-job-done":  # htmx polls it
            assert worker.poll() is None, "the worker stopped"
            assert LearnJob.objects.get().state != LearnJob.State.FAILED, (
                LearnJob.objects.get().error
            )
            response = page.request.get(base + "/")  # the paste page keeps answering
            assert response.ok
            answered += 1
            assert answered < 600, "the job page never showed the job done"
            curator.wait_for_timeout(100)
    finally:
        _stop(worker)
    assert answered >= 1  # the worker needs a while to start: the site answered meanwhile
    shown = progress.inner_text()
    assert f"{MODULES + 1} of {MODULES + 1} files read" in shown
    assert f"{MODULES + 1} sites found" in shown
    assert f"Revision {head}" in shown
    assert progress.locator("table.kb-report td").first.inner_text() == str(MODULES + 1)
    screenshot(curator, "sources-job-done")
    job.refresh_from_db()
    assert (job.state, job.revision, job.created) == (LearnJob.State.DONE, head, MODULES + 1)
    record = ErrorRecord.objects.get(repo="local/widgets", error_message=MESSAGE)

    # The traceback now matches the learned record.
    page.goto(base + "/")
    page.fill("#paste-text", TRACEBACK)
    card = page.locator("#results article.match-card").first
    card.wait_for(timeout=10_000)
    assert page.locator("#results article.match-card").count() == 1
    assert f"/records/{record.pk}/" in card.inner_html()
    assert f"widgets/billing.py:{LINE}" in card.locator(".meta").inner_text()
    assert "RuntimeError" in card.locator(".meta").inner_text()
    assert "widget sprocket failed with code 42" in card.locator(".matched-line").inner_text()
    screenshot(page, "sources-paste-matched")

    card.locator("a.more").click()
    page.wait_for_url(f"**/records/{record.pk}/")
    marked = page.locator("#snippet-code mark.error-line")
    assert marked.count() == 1
    assert marked.get_attribute("id") == f"L{LINE}"
    assert "raise RuntimeError(" in marked.inner_text()
    assert page.locator("#snippet-code .ln").first.inner_text() == "1"
    link = page.get_by_role("link", name="View on GitHub")
    assert link.get_attribute("href") == (
        f"https://github.com/acme/widgets/blob/{head}/widgets/billing.py#L1-L{WINDOW_END}"
    )
    explanation = page.locator("section.code-explanation").inner_text()
    assert "Raised in charge when code > 9 holds" in explanation
    learned = page.locator("footer.provenance p.learned").inner_text()
    assert learned == f"Learned from local/widgets at {head[:12]}…."
    screenshot(page, "sources-record-learned")
    for p in (page, curator):
        assert_clean(p)
