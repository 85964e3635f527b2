"""Format v4: Parquet ``content_entry`` manifests, their typed stats and manifest-DV encodings."""
