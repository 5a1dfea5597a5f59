"""Error records: the stored knowledge and every way it is written.

Owns the ``ErrorRecord`` model with its tags, revision counter and import jobs
(``models``), the dataset's schema (``schema``: dataset keys to model fields and back),
who is a curator, the one rule for reading drafts and doing curators' work (``access``),
what makes a record admissible (``validation``: its pattern compiled by the engine, its
fields checked), the JSONL importer and exporter, the search index kept in step with the
records table (``search_index``), and the writes curators and publishers make
(``services``). Importing and publishing announce themselves through
``signals.records_published``, which the apps above connect to.

The app's label stays ``kb``, the label the records were first stored under, so the
tables, the migration history and every permission (``kb.change_errorrecord``) keep their
names.
"""
