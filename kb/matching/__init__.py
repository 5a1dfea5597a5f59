"""Matching: the paste page, the match API and the compiled matcher each process serves.

The pure engine is ``kb.engine`` (no Django); this app feeds it the published records and
serves its answers. ``holder`` keeps each process's compiled matcher current (a revision
check per request, a delta for small changes); ``store`` and ``models`` keep compiled
builds by content in the database (or a storage) so a host loads rather than compiles;
``views`` and ``api`` are the paste page and ``POST /api/match``; ``formats`` renders a
result as Markdown, GitHub annotations or JSON for ``manage.py match`` and the API;
``values`` names the values a match captured. ``signals.text_matched`` tells the apps
above what was matched (the learning loop counts usage from it).
"""
