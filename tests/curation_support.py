"""Fixtures for the curation admin tests: a curator (staff, in the "Curators" group made
by the migration, not a superuser) and a client logged in as one."""

from __future__ import annotations

import importlib
from typing import Any

import pytest
from django.contrib.auth.models import Group, Permission, User
from django.test import Client
from django.urls import reverse

from kb.records.models import ErrorRecord

__all__ = ["change_url", "csrf_client", "curator", "curator_client", "form_data", "make_curator"]


def curators_group() -> Group:
    """The group the migration made (re-made after a transactional test's flush)."""
    migration = importlib.import_module("kb.records.migrations.0004_curators_group")
    learning = importlib.import_module("kb.sources.migrations.0002_curators_learn")
    group, created = Group.objects.get_or_create(name=migration.GROUP)
    if created or not group.permissions.exists():
        for app, codename in [*migration.PERMISSIONS, *learning.PERMISSIONS]:
            group.permissions.add(
                Permission.objects.get(content_type__app_label=app, codename=codename)
            )
    return group


def make_curator(username: str = "curator", password: str | None = None) -> User:
    """A curator; without a password (hashing one is slow by design) unless given."""
    user = User.objects.create_user(username, f"{username}@example.com", password, is_staff=True)
    user.groups.add(curators_group())
    return user


@pytest.fixture
def curator(db: Any) -> User:
    return make_curator()


@pytest.fixture
def curator_client(curator: User) -> Client:
    client = Client()
    client.force_login(curator)
    return client


@pytest.fixture
def csrf_client(curator: User) -> Client:
    """A curator's client that enforces CSRF like a browser would."""
    client = Client(enforce_csrf_checks=True)
    client.force_login(curator)
    return client


def form_data(record: ErrorRecord, **changes: Any) -> dict[str, Any]:
    """The change form's POST data for ``record`` as it is, with ``changes`` applied."""
    data: dict[str, Any] = {
        "status": record.status,
        "error_message": record.error_message,
        "message_pattern": record.message_pattern,
        "slug": record.slug,
        "error_type": record.error_type,
        "error_class": record.error_class or "",
        "error_code": record.error_code or "",
        "http_status": record.http_status or "",
        "severity": record.severity,
        "handling_strategy": record.handling_strategy or "",
        "background_tag": record.background_tag or "",
        "tags": ", ".join(record.tags),
        "documentation": record.documentation or "",
        "trigger_scenarios": record.trigger_scenarios or "",
        "common_situations": record.common_situations or "",
        "solutions": "\n".join(record.solutions),
        "prevention_tips": "\n".join(record.prevention_tips),
        "example_fix": record.example_fix or "",
        "validation_code": record.validation_code or "",
        "type_guard": record.type_guard or "",
        "try_catch_pattern": record.try_catch_pattern or "",
        "change_reason": "",
    }
    data.update(changes)
    return data


def change_url(record: ErrorRecord) -> str:
    return reverse("admin:kb_errorrecord_change", args=[record.pk])
