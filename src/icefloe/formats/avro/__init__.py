"""Avro: v1-v3 manifest lists and manifests, their schemas, and columnar decoding to Arrow."""
