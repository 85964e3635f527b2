"""Parquet data files: writing them with Iceberg field ids and collecting their column metrics."""
