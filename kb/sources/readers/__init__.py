"""Reading a source's files without running any of it: git repositories (`git`), source
archives (`archives`) and releases from the package index (`index`).

No Django here: the caller (``kb.sources.learning``) passes the settings in. What comes
out is a `Snapshot`: a revision and the files to read, each a path and a way to get its
bytes, plus the paths that left the source since the revision learned before (when the
reader can tell: git diffs; archives are read whole). Everything in a source is
untrusted: git runs with arguments that cannot be read as options and with no hooks, no
external diff or textconv, no system or global configuration; archives are read in place
(nothing is written to disk) and refuse links, devices, paths outside the archive, and
size and file-count bombs; a release is downloaded, never built.
"""

from __future__ import annotations

from kb.sources.readers.base import FileEntry, Refused, Snapshot, SourceError

__all__ = ["FileEntry", "Refused", "Snapshot", "SourceError"]
