"""The read side of browsing: what the browse pages, their JSON twins and the admin list.

- ``kb.browse.selectors``: tags, a tag's records, the filtered and searched record list,
  paginated the same way for a page and its JSON twin;
- ``kb.browse.filters``: the record list's GET parameters (django-filter) and facet counts;
- ``kb.records.links``: the one place that turns a record id or a tag name into its URL.

Callers import the module they need; this package re-exports nothing, so ``kb.records.models`` can
use ``links`` without importing the selectors (which import the models).
"""
