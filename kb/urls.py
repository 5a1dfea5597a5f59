"""URL map. Route names are global (no namespace); the JSON API lives under ``/api/``.

The learning loop's admin pages were under ``/admin/kb/`` while its models were part of
the records app; those addresses redirect to ``/admin/loop/`` so bookmarks keep working.
"""

from __future__ import annotations

from django.contrib import admin
from django.urls import include, path, re_path
from django.views.generic import RedirectView

from kb import http
from kb.api import api
from kb.browse import record_page, views
from kb.matching import views as paste
from kb.ops import views as ops

urlpatterns = [
    path("", paste.paste_page, name="paste"),
    path("match/", paste.match_view, name="match"),
    path("records/", views.record_list, name="record_list"),
    path("records/<str:record_id>/", record_page.record_detail, name="record_detail"),
    path("tags/", views.tag_list, name="tag_list"),
    path("tags/<str:tag>/", views.tag_detail, name="tag_detail"),
    path("", include("kb.loop.urls")),
    path("healthz", ops.healthz, name="healthz"),
    path("metrics", ops.metrics, name="metrics"),
    path("api/", api.urls),
    re_path(
        r"^admin/kb/(?P<rest>(?:gap|gapword|proposal|vote|recordtally|usageday)/.*)$",
        RedirectView.as_view(url="/admin/loop/%(rest)s", query_string=True, permanent=True),
    ),
    path("admin/", admin.site.urls),
]

handler400 = http.bad_request
handler403 = http.permission_denied
handler404 = http.page_not_found
handler500 = http.server_error
