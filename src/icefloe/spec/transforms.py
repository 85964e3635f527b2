"""Partition transforms: identity, bucket[N], truncate[W], year, month, day, hour, void.

CONTRACT (implemented by the spec helper):
- ``parse_transform(text) -> Transform`` parses ``"bucket[16]"``, ``"truncate[4]"``, ``"day"`` ...;
  unknown names give ``UnknownTransform`` (kept for round-trip, cannot be applied).
- ``Transform.apply(source_type, value)`` transforms one Python value in Iceberg's internal
  representation (int days for date, int micros for timestamp, int nanos for *_ns, Decimal,
  str, bytes, uuid.UUID) and returns the partition value (None stays None).
- ``Transform.result_type(source_type)``, ``can_transform(source_type)``, ``preserves_order``,
  ``str(t)`` (the JSON form), equality by value.
- bucket uses murmur3_x86_32 (mmh3) on the spec's single-value hash input; year/month/day/hour
  results are ordinals since 1970 (day result type is ``date``).
"""
