"""Fixtures for the curation admin tests: a curator (staff, in the "Curators" group made
by the migration, not a superuser) and a client logged in as one."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import Group, User
from django.test import Client

__all__ = ["csrf_client", "curator", "curator_client", "make_curator"]


def make_curator(username: str = "curator", password: str | None = None) -> User:
    """A curator; without a password (hashing one costs a second) unless given."""
    user = User.objects.create_user(username, f"{username}@example.com", password, is_staff=True)
    user.groups.add(Group.objects.get(name="Curators"))
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
