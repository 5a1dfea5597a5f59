"""The learning loop: what people report, propose and vote, and how curators turn it into
records.

The pure rules (what a report may keep, how reports fold into gaps, a draft pattern from a
gap) live in `kb.loop.text`, without Django; this package stores their results and serves
them. One room per concern: `models` (the tables), `services` (every write, keyword-only),
`votes` (who the same voter is, casting a vote, the record tallies), `closing` (gaps close
when a record that answers them is published: connected to
``kb.records.signals.published`` in ``LoopConfig.ready``), `usage` (the per-worker
hit/miss buffer, fed by ``kb.matching.signals.text_matched``), `selectors` (the work
queue's reads), `views` and `admin` (pages), `api` (the JSON twins). See
docs/learning-loop.md.
"""

from __future__ import annotations
