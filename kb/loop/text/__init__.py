"""The learning loop's pure parts: what a report of an unknown error may store, and how
reports of the same error fold into one gap.

The product takes nothing from a paste unless the user clicks "Report", and even then only
the error lines, with secrets and personal data replaced by placeholders. These modules
decide what that stored text is and how it is grouped; the Django side (models, views,
admin, API) calls them and owns storage. Pure Python like `kb.engine`: no Django imports,
so each rule is tested without a database.

* `redact`: secrets and personal data -> placeholders, with counts per placeholder.
* `error_lines`: the error lines of a paste (messages, not log envelopes).
* `gaps`: a line's template (variables masked) and the `GapIndex` that folds reports.
* `derive`: a draft record's bounded, RE2/Hyperscan-compatible pattern from a gap.
"""

from __future__ import annotations
