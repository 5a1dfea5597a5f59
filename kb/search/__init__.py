"""Full-text search over records: ``kb.search.query`` answers queries, ``kb.search.index``
keeps the structures they read (the SQLite FTS5 table and its triggers, the PostgreSQL
trigram index) and indexes an import's batch set-based."""
