from __future__ import annotations

from django.apps import AppConfig


class LoopConfig(AppConfig):
    name = "kb.loop"
    label = "loop"
    verbose_name = "Learning loop"

    def ready(self) -> None:
        # What the lower apps announce, and the loop acts on (kb.records.signals,
        # kb.matching.signals): gaps close when records are published; matches are counted.
        from kb.loop import closing, usage
        from kb.matching.signals import text_matched
        from kb.records.signals import published

        published.connect(closing.records_published, dispatch_uid="kb.loop.closing")
        text_matched.connect(usage.matched, dispatch_uid="kb.loop.usage")
