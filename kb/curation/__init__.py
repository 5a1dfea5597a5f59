"""Curation: the Django admin over the records, for curators.

The record, tag and import-job admins with their forms, widgets, bulk actions and list
filters (``admin``), the pattern tester (``tester``: a draft pattern tried against a
sample and against every other record), the background import of an uploaded JSONL file
(``tasks``) and ``manage.py create_curator``. It sits above every other app, because a
curator's page shows what each of them derives: the search, the explanation of the
source, the live matcher's verdict, the votes. The learning loop's own admin (gaps,
proposals, the work queue) is in ``kb.loop``.
"""
