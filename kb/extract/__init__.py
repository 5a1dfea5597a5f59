"""Error sites read from a repository's own source code: the pure core behind learning.

A **site** is one place in a source file that raises, returns or logs an error message a
user could paste: a ``raise`` of an exception with a message, a Rust ``bail!``, a Go
``fmt.Errorf``, a Java ``throw new``, a logger call at warning level or above. Each
language module parses a whole file with tree-sitter (never by executing or importing
it) and returns its sites with the message template in the source's own placeholder
notation; `kb.extract.records` turns a site into a record of the dataset's schema, with a
bounded pattern, so that everything downstream (import rules, curation, the matcher)
takes learned records exactly as it takes the dataset's.

Pure Python, no Django: the ``kb.sources`` app reads repositories and archives, calls
`extract_file` and writes the records through the importer's path.
"""

from __future__ import annotations

from kb.extract.sites import ErrorType, Notation, Severity, Site

__all__ = ["ErrorType", "Notation", "Severity", "Site"]
