"""Placeholder: the JSON API (django-ninja) is built here: POST /api/match and JSON twins."""

from __future__ import annotations

from ninja import NinjaAPI

api = NinjaAPI(title="Error knowledge base API", version="1")
