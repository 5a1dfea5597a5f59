"""Browse and search: the read side of the records, as pages and as JSON.

Owns the list, tag and record pages (``views``: ``/records/``, ``/tags/``,
``/tags/<tag>/``; ``record_page``: ``/records/<id>/``), their JSON twins (``api``, with its
``schemas``), the reads behind both (``selectors``: tags, a tag's records, the filtered
and searched record list, paginated the same way for a page and its twin; ``filters``:
the list's GET parameters and facet counts; ``releases``: a record's releases as the
pages show them, and the filter by release), the query side of full-text search
(``search``; the index itself is kept in step by ``kb.records.search_index``), and how a
record's source is shown wherever it appears (``highlight``: the snippet coloured with
its real line numbers; ``explanations``: what the code says, from ``kb.explain``, cached).

Callers import the module they need; this package re-exports nothing.
"""
