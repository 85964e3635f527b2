"""Row-level writes, one module per verb: ``delete``, ``update``, ``merge``, ``upsert``.

The Python ``Table`` API, the Spark functions and the SQL front-end all plan their changes here;
``change_builder`` turns per-file decisions into files (copy-on-write or merge-on-read),
``row_io`` reads and writes changed rows with their lineage, ``position_deletes`` writes the
deletes of merge-on-read.
"""
