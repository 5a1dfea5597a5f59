"""The learning loop's Django side: what people report, propose and vote is stored here,
and how curators turn it into records.

The pure rules (what a report may keep, how reports fold into gaps, a draft pattern from a
gap) live in `kb.loop.text`, without Django; this package stores their results and serves
them. One room per concern: `models` (the tables), `services` (every write, keyword-only),
`votes` (who the same voter is, casting a vote, the record tallies), `closing` (the call
every publisher makes so gaps close), `usage` (the per-worker hit/miss buffer),
`selectors` (the work queue's reads), `views` and `admin` (pages), `kb.loop.api` (the
JSON twins). See docs/learning-loop.md.
"""

from __future__ import annotations
