"""icefloe: Apache Iceberg tables (v1–v4) in Python, with Spark as the data plane."""

from __future__ import annotations

__version__ = "0.1.0"
