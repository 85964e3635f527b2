"""Table metadata files: JSON (plain or gzip), the metadata log and the read cache."""
