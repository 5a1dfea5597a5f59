"""Import JSONL records: streaming, batched, idempotent, and kind to curators.

``import_jsonl(lines, ...)`` reads the dataset's JSONL (one ``{"record": ..., "datasetVersion":
...}`` a line) from any iterable of ``bytes`` lines, so memory stays flat whatever the file
size. Each bad line is reported with its number, field and reason; every good line is
stored. The management command and the admin upload are thin shells around it.

Re-import policy (see docs/importing.md):
- a record whose content equals what is stored is not written (``unchanged``);
- a record with different content and a ``contentChangedAt`` not older than the stored one
  is updated, except fields a curator edited: those are kept and the incoming value is
  stored as a conflict for the curator to settle; an older one is skipped (``stale``);
- within one file the first line with an id wins; a later duplicate is rejected;
- a record whose pattern the matcher refuses is stored disabled, with the engine's reason
  (counted in ``disabled`` and listed with its line in ``disabled_records``);
- the records commit ``commit_records`` at a time (an interrupted import keeps whole
  commits and resumes by importing the file again), or, with ``atomic=True``, the whole
  file is one transaction that any rejected line rolls back.

Modules: ``lines`` (bytes to JSON, and the one gzip rule), ``parsing`` (lines to checked
records), ``core`` (the loop and the policy), ``admission`` (patterns, a batch at a time),
``rows`` (portable multi-row writes of records, history and tag rows), ``seen`` (in-file
duplicate ids), ``report``.
"""

from __future__ import annotations

from kb.records.importer.core import BATCH_SIZE, COMMIT_RECORDS, AtomicImportFailed, import_jsonl
from kb.records.importer.lines import MAX_LINE_BYTES, decode_line, decompressed, read_lines
from kb.records.importer.report import MAX_REPORTED_ERRORS, ImportReport, LineError
from kb.records.schema import FIELDS

__all__ = [
    "BATCH_SIZE",
    "COMMIT_RECORDS",
    "FIELDS",
    "MAX_LINE_BYTES",
    "MAX_REPORTED_ERRORS",
    "AtomicImportFailed",
    "ImportReport",
    "LineError",
    "decode_line",
    "decompressed",
    "import_jsonl",
    "read_lines",
]
