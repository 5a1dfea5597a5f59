"""WSGI entry point (gunicorn kb.wsgi)."""

from __future__ import annotations

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "kb.settings")

application = get_wsgi_application()

# Every server that loads the app writes its buffered usage counts when it stops
# (runserver has no exit hook of its own; gunicorn's are in kb/gunicorn_conf.py).
from kb.loop.usage import flush_on_exit  # noqa: E402 - needs the app set up above

flush_on_exit()
