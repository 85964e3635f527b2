"""Where the main job runs and what it stores into: Spark master, catalog, warehouse, storage options.

The defaults are the embedded ones (``local[2]``, the SQLite catalog and the local warehouse under
``./.icefloe``). On a cluster the job takes ``--master spark://host:7077``, a catalog URI (e.g.
PostgreSQL), an ``s3://`` warehouse and the Iceberg ``s3.*`` properties
(``--catalog-property s3.endpoint=...``) plus any Spark setting (``--conf key=value``).

Credentials do not belong on the command line (it is visible to every user of the machine and ends
up in shell histories and process listings): when no ``s3.access-key-id`` is given, the standard
AWS environment variables are read and passed on as catalog properties. Those reach the executors
inside the serialized tasks (never in a log line) and the Spark conf, where Spark's
``spark.redaction.regex`` masks them (the keys name a secret or a token); the catalog never
writes them into table metadata.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping
from dataclasses import dataclass, field

from icefloe.catalog import default_catalog_uri, default_warehouse
from icefloe.io.fileio import S3_ACCESS_KEY_ID, S3_SECRET_ACCESS_KEY, S3_SESSION_TOKEN

ENV_CREDENTIALS = (
    ("AWS_ACCESS_KEY_ID", S3_ACCESS_KEY_ID),
    ("AWS_SECRET_ACCESS_KEY", S3_SECRET_ACCESS_KEY),
    ("AWS_SESSION_TOKEN", S3_SESSION_TOKEN),
)


@dataclass(frozen=True)
class JobTarget:
    """The Spark master, the catalog (URI, warehouse, other properties) and extra Spark settings."""

    master: str = "local[2]"
    catalog_uri: str | None = None
    warehouse: str | None = None
    catalog_properties: dict[str, str] = field(default_factory=dict)
    spark_conf: dict[str, str] = field(default_factory=dict)


def add_target_arguments(parser: argparse.ArgumentParser) -> None:
    """Add ``--master``, ``--catalog-uri``, ``--warehouse``, ``--catalog-property`` and ``--conf``."""
    parser.add_argument("--master", default="local[2]", help="Spark master URL, e.g. spark://host:7077")
    parser.add_argument("--catalog-uri", help="SQL catalog URI (default: the embedded SQLite catalog)")
    parser.add_argument("--warehouse", help="warehouse location, e.g. s3://bucket/warehouse")
    parser.add_argument(
        "--catalog-property",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="catalog/storage property, e.g. s3.endpoint=http://minio:9000 (repeatable)",
    )
    parser.add_argument(
        "--conf", action="append", default=[], metavar="KEY=VALUE", help="Spark setting (repeatable)"
    )


def target_from_arguments(args: argparse.Namespace, environ: Mapping[str, str] | None = None) -> JobTarget:
    """The job target the parsed arguments (and the AWS environment credentials) describe."""
    props = _pairs(args.catalog_property, "--catalog-property")
    props.update(credentials_from_environment(props, os.environ if environ is None else environ))
    return JobTarget(
        master=args.master,
        catalog_uri=args.catalog_uri or default_catalog_uri(),
        warehouse=args.warehouse or default_warehouse(),
        catalog_properties=props,
        spark_conf=_pairs(args.conf, "--conf"),
    )


def credentials_from_environment(props: Mapping[str, str], environ: Mapping[str, str]) -> dict[str, str]:
    """``s3.*`` credential properties from the AWS environment variables, unless given explicitly.

    Executors run in other processes (other machines on a real cluster) that do not see the
    driver's environment, so the credentials travel with the tasks like every other property.
    """
    if S3_ACCESS_KEY_ID in props or not environ.get("AWS_ACCESS_KEY_ID"):
        return {}
    return {prop: environ[var] for var, prop in ENV_CREDENTIALS if environ.get(var)}


def _pairs(items: list[str], option: str) -> dict[str, str]:
    pairs: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise SystemExit(f"{option} takes KEY=VALUE, got {item!r}")
        pairs[key.strip()] = value
    return pairs
