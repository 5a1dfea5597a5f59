from __future__ import annotations

from typing import Any

from django.apps import AppConfig


class CurationConfig(AppConfig):
    name = "kb.curation"
    label = "curation"
    verbose_name = "Curation"

    def ready(self) -> None:
        # A learn (kb.sources, below) changed records: build and publish the matcher for
        # them where it ran (the worker, or manage.py learn), as an import does.
        from kb.sources.signals import learned

        learned.connect(_publish_after_learn, dispatch_uid="kb.curation.learned")


def _publish_after_learn(**_signal: Any) -> None:
    from kb.curation.tasks import publish_matcher_safely

    publish_matcher_safely()
