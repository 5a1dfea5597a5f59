"""URL map. Route names are global (no namespace); the JSON API lives under ``/api/``."""

from __future__ import annotations

from django.contrib import admin
from django.urls import include, path

from kb.api import api
from kb.views import browse, errors, health, metrics, paste, records

urlpatterns = [
    path("", paste.paste_page, name="paste"),
    path("match/", paste.match_view, name="match"),
    path("records/", browse.record_list, name="record_list"),
    path("records/<str:record_id>/", records.record_detail, name="record_detail"),
    path("tags/", browse.tag_list, name="tag_list"),
    path("tags/<str:tag>/", browse.tag_detail, name="tag_detail"),
    path("", include("kb.loop.urls")),
    path("healthz", health.healthz, name="healthz"),
    path("metrics", metrics.metrics, name="metrics"),
    path("api/", api.urls),
    path("admin/", admin.site.urls),
]

handler400 = errors.bad_request
handler403 = errors.permission_denied
handler404 = errors.page_not_found
handler500 = errors.server_error
