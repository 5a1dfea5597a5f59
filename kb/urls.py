"""URL map. Public pages live in the ``kb`` namespace; the API under ``/api/``."""

from __future__ import annotations

from django.contrib import admin
from django.urls import include, path

from kb.views import health

app_patterns = [
    path("healthz", health.healthz, name="healthz"),
]

urlpatterns = [
    path("", include((app_patterns, "kb"))),
    path("admin/", admin.site.urls),
]
