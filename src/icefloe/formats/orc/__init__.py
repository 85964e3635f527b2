"""ORC data files and position-delete files written by other engines (Iceberg Java), read to Arrow."""
