"""The learning loop's pages, under the ``loop`` namespace (included from ``kb.urls``)."""

from __future__ import annotations

from django.urls import path

from kb.loop import views

app_name = "loop"

urlpatterns = [
    path("report/", views.report, name="report"),
    path("feedback/", views.feedback, name="feedback"),
    path("records/<str:record_id>/propose/", views.propose, name="propose"),
]
