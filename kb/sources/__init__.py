"""Sources: error records learned from a codebase's own code, kept in step with it.

A `Source` is a git repository (a local path or a remote), a release on the package
index (``pypi:NAME==VERSION``) or a source archive. Learning it (``learning.learn``, run
by the worker's task ``tasks.run_learn``, by the admin's **Learn now** and by
``manage.py learn``) reads its files (``readers``: git's plumbing, archives in place,
never running anything), finds the error sites in each (the pure ``kb.extract``), turns
them into records of the dataset's schema and writes them through the importer, so a
curator's edits are kept and conflicts reported as for any import. ``LearnedSite`` says
which record each site became and since which revision a site is no longer in the code
(kept and still matched, never deleted); ``LearnJob`` is one run, with its progress.

Sits directly above ``kb.records`` (docs/architecture.md): the apps above read which
source and revision a record was learned from.
"""
