"""The rebuild after an import, as both benchmarks that measure it hold it: the store's on
the dataset (``bench_store.py``) and the scale run's at a million records
(``bench_scale.py``). Its own module, free of set-up, so that either imports it without
the other's Django settings."""

IMPORT_SHARE = 0.01  # the import a rebuild follows: 1% new records
REBUILD_GOAL = 0.10  # its rebuild within this share of the full build's time
