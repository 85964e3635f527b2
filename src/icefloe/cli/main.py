"""The ``icefloe`` command line: list, inspect and maintain the tables of a catalog.

``icefloe [--uri URI] [--warehouse LOCATION] COMMAND ...``. Without ``--uri`` / ``--warehouse`` the
catalog is the one ``icefloe.catalog.load_catalog()`` opens: ``ICEFLOE_CATALOG_URI`` /
``ICEFLOE_WAREHOUSE``, else ``./.icefloe/catalog.db`` and ``./.icefloe/warehouse``. Output is plain
text on stdout; an error icefloe raises on purpose prints ``error: <message>`` on stderr and exits
with status 1, a usage error exits with status 2.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import TypeAlias

from sqlalchemy.exc import ArgumentError

from icefloe.catalog import ENV_CATALOG_URI, ENV_WAREHOUSE, load_catalog
from icefloe.catalog.base import Catalog
from icefloe.catalog.identifiers import parse_namespace
from icefloe.cli import describe, serve
from icefloe.errors import IcefloeError, ValidationError
from icefloe.maintenance.expire_snapshots import ExpireResult, expire_snapshots
from icefloe.maintenance.remove_orphan_files import OrphanResult, remove_orphan_files
from icefloe.maintenance.rewrite_table_path import rewrite_table_path

Handler = Callable[[Catalog, argparse.Namespace], list[str]]
Commands: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"

PROG = "icefloe"
DURATION = re.compile(r"(\d+)([smhdw])")
SECONDS_PER_UNIT = {"s": 1, "m": 60, "h": 3600, "d": 86_400, "w": 604_800}
OLDER_THAN_HELP = "an ISO-8601 timestamp (naive = UTC) or a duration ago such as 3d, 12h, 30m, 0s"


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``icefloe`` command with ``argv`` (default: the process arguments); the exit status."""
    parser = build_parser()
    try:
        args, extra = parser.parse_known_args(argv)
        if args.command != "pipeline" and extra:
            parser.error(f"unrecognized arguments: {' '.join(extra)}")
        return run(args, extra)
    except SystemExit as exc:  # argparse (--help, usage errors), here or in the pipeline's own parser
        return exit_status(exc)
    except IcefloeError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except BrokenPipeError:  # the reader went away (``icefloe tree t | head``): stop quietly
        silence_stdout()
        return 1


def silence_stdout() -> None:
    """Point stdout at /dev/null so flushing it at exit cannot raise a second BrokenPipeError."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())


def exit_status(exc: SystemExit) -> int:
    """The process exit status a ``SystemExit`` stands for."""
    if exc.code is None or isinstance(exc.code, int):
        return exc.code or 0
    return 1


def run(args: argparse.Namespace, extra: list[str]) -> int:
    """Run the parsed command and print what it returns."""
    if args.command == "pipeline":
        return run_pipeline(args.uri, args.warehouse, extra)
    handler: Handler = args.handler
    with open_catalog(args.uri, args.warehouse, args.catalog, catalog_properties(args.property)) as catalog:
        lines = handler(catalog, args)
    if lines:
        print("\n".join(lines))
    return 0


def catalog_properties(pairs: Sequence[str] | None) -> dict[str, str]:
    """``KEY=VALUE`` pairs (``--property s3.endpoint=http://...``) as catalog properties."""
    props: dict[str, str] = {}
    for pair in pairs or ():
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise ValidationError(f"--property expects KEY=VALUE, got {pair.split('=')[0]!r}")
        props[key.strip()] = value
    return props


def open_catalog(
    uri: str | None, warehouse: str | None, name: str = "default", properties: dict[str, str] | None = None
) -> Catalog:
    """Catalog ``name`` at ``uri`` / ``warehouse``, each defaulting as ``load_catalog()`` does."""
    options = {key: value for key, value in (("uri", uri), ("warehouse", warehouse)) if value}
    options = {**(properties or {}), **options}
    try:
        return load_catalog(name, **options)
    except ArgumentError as exc:  # SQLAlchemy cannot parse the URI or has no such dialect
        raise ValidationError(f"cannot open the catalog at {uri!r}: {exc}") from None


# -- argument parsing -------------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    """The ``icefloe`` argument parser with all its subcommands."""
    parser = argparse.ArgumentParser(
        prog=PROG, description="List, inspect and maintain Apache Iceberg tables in an icefloe catalog."
    )
    parser.add_argument(
        "--uri", help=f"catalog database URI (default: ${ENV_CATALOG_URI}, else ./.icefloe/catalog.db)"
    )
    parser.add_argument(
        "--catalog",
        default="default",
        metavar="NAME",
        help="catalog name: the JDBC tables hold several catalogs side by side (default: default)",
    )
    parser.add_argument(
        "--warehouse",
        metavar="LOCATION",
        help=f"warehouse for new tables (default: ${ENV_WAREHOUSE}, else ./.icefloe/warehouse)",
    )
    parser.add_argument(
        "--property",
        action="append",
        metavar="KEY=VALUE",
        help="catalog property, repeatable (e.g. s3.endpoint=http://127.0.0.1:9000; "
        "prefer AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY for secrets)",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    _add_tables(commands)
    _add_info(commands)
    _add_snapshots(commands)
    _add_tree(commands)
    _add_expire_snapshots(commands)
    _add_remove_orphan_files(commands)
    _add_rewrite_table_path(commands)
    serve.add_serve(commands, serve.cmd_serve)
    commands.add_parser(
        "pipeline",
        add_help=False,
        help="run the end-to-end Python pipeline (python -m icefloe.cli.pipeline; its options follow)",
    )
    return parser


def _command(commands: Commands, name: str, summary: str, handler: Handler) -> argparse.ArgumentParser:
    """A subcommand parser whose ``handler`` runs it."""
    sub = commands.add_parser(name, help=summary, description=summary)
    sub.set_defaults(handler=handler)
    return sub


def _add_tables(commands: Commands) -> None:
    sub = _command(commands, "tables", "list namespaces and their tables", cmd_tables)
    sub.add_argument("namespace", nargs="?", default="", help="only this namespace and those below it")


def _add_info(commands: Commands) -> None:
    sub = _command(
        commands, "info", "format version, location, schema, partitioning, properties and refs", cmd_info
    )
    sub.add_argument("table", help="table identifier, e.g. db.trips")


def _add_snapshots(commands: Commands) -> None:
    sub = _command(commands, "snapshots", "one line per snapshot, oldest first", cmd_snapshots)
    sub.add_argument("table", help="table identifier, e.g. db.trips")


def _add_tree(commands: Commands) -> None:
    sub = _command(commands, "tree", "picture of a snapshot's metadata tree", cmd_tree)
    sub.add_argument("table", help="table identifier, e.g. db.trips")
    sub.add_argument("--snapshot", type=int, metavar="ID", help="snapshot id (default: the current one)")


def _add_expire_snapshots(commands: Commands) -> None:
    sub = _command(
        commands, "expire-snapshots", "expire old snapshots and delete the files only they used", cmd_expire
    )
    sub.add_argument("table", help="table identifier, e.g. db.trips")
    _add_older_than(
        sub, "snapshots committed before this may expire", "history.expire.max-snapshot-age-ms, 5 days"
    )
    sub.add_argument(
        "--retain-last", type=int, metavar="N", help="keep at least N snapshots per branch (default 1)"
    )
    sub.add_argument(
        "--snapshot-id",
        type=int,
        nargs="+",
        action="extend",
        default=[],
        metavar="ID",
        dest="snapshot_ids",
        help="also expire these snapshots (alone, only these)",
    )
    sub.add_argument("--keep-files", action="store_true", help="only change the metadata; delete no files")


def _add_remove_orphan_files(commands: Commands) -> None:
    sub = _command(
        commands, "remove-orphan-files", "delete files under the table location nothing names", cmd_orphans
    )
    sub.add_argument("table", help="table identifier, e.g. db.trips")
    _add_older_than(sub, "only files modified before this", "3 days ago")
    sub.add_argument("--dry-run", action="store_true", help="only list the orphans")


def _add_rewrite_table_path(commands: Commands) -> None:
    sub = _command(
        commands,
        "rewrite-table-path",
        "stage a copy of a table under another location prefix, with the list of files to copy",
        cmd_rewrite_table_path,
    )
    sub.add_argument("table", help="table identifier, e.g. db.trips")
    sub.add_argument("--source-prefix", required=True, metavar="PREFIX", help="the prefix paths have now")
    sub.add_argument(
        "--target-prefix", required=True, metavar="PREFIX", help="the prefix the copy's paths get"
    )
    sub.add_argument(
        "--start-version", metavar="FILE", help="metadata file already copied: copy only what came after it"
    )
    sub.add_argument(
        "--end-version", metavar="FILE", help="last metadata file to copy (default: the current)"
    )
    sub.add_argument(
        "--staging-location",
        metavar="LOCATION",
        help="where rewritten files go (default: <metadata dir>/copy-table-staging-<uuid>)",
    )


def _add_older_than(sub: argparse.ArgumentParser, meaning: str, default: str) -> None:
    """The ``--older-than WHEN`` option of the maintenance commands."""
    sub.add_argument(
        "--older-than",
        type=point_in_time,
        metavar="WHEN",
        help=f"{meaning}: {OLDER_THAN_HELP} (default: {default})",
    )


def point_in_time(text: str) -> datetime:
    """``--older-than``: an ISO-8601 timestamp (naive = UTC) or a duration before now, as UTC."""
    duration = DURATION.fullmatch(text.strip())
    if duration:
        seconds = int(duration[1]) * SECONDS_PER_UNIT[duration[2]]
        return datetime.now(UTC) - timedelta(seconds=seconds)
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not {OLDER_THAN_HELP}") from None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


# -- commands ---------------------------------------------------------------------------------------


def cmd_tables(catalog: Catalog, args: argparse.Namespace) -> list[str]:
    """``icefloe tables [NAMESPACE]``."""
    return describe.catalog_listing(catalog, parse_namespace(args.namespace, allow_empty=True))


def cmd_info(catalog: Catalog, args: argparse.Namespace) -> list[str]:
    """``icefloe info TABLE``."""
    return describe.table_info(catalog.load_table(args.table))


def cmd_snapshots(catalog: Catalog, args: argparse.Namespace) -> list[str]:
    """``icefloe snapshots TABLE``."""
    return describe.snapshot_lines(catalog.load_table(args.table))


def cmd_tree(catalog: Catalog, args: argparse.Namespace) -> list[str]:
    """``icefloe tree TABLE [--snapshot ID]``."""
    return describe.tree_lines(catalog.load_table(args.table), args.snapshot)


def cmd_expire(catalog: Catalog, args: argparse.Namespace) -> list[str]:
    """``icefloe expire-snapshots TABLE ...``."""
    result = expire_snapshots(
        catalog.load_table(args.table),
        older_than=args.older_than,
        retain_last=args.retain_last,
        snapshot_ids=args.snapshot_ids,
        delete_files=not args.keep_files,
    )
    return expire_report(result, kept_files=args.keep_files)


def cmd_orphans(catalog: Catalog, args: argparse.Namespace) -> list[str]:
    """``icefloe remove-orphan-files TABLE ...``."""
    result = remove_orphan_files(
        catalog.load_table(args.table), older_than=args.older_than, dry_run=args.dry_run
    )
    return orphan_report(result)


def cmd_rewrite_table_path(catalog: Catalog, args: argparse.Namespace) -> list[str]:
    """``icefloe rewrite-table-path TABLE --source-prefix P --target-prefix Q ...``."""
    result = rewrite_table_path(
        catalog.load_table(args.table),
        args.source_prefix,
        args.target_prefix,
        start_version=args.start_version,
        end_version=args.end_version,
        staging_location=args.staging_location,
    )
    return describe.aligned(
        [
            ("latest version", result.latest_version, ""),
            ("file list", result.file_list_location, ""),
            ("staged files", str(result.rewritten_files), "(paths rewritten)"),
            ("copied files", str(result.copied_files), "(as they are)"),
        ]
    )


def run_pipeline(uri: str | None, warehouse: str | None, pipeline_args: list[str]) -> int:
    """``icefloe pipeline ...``: ``icefloe.cli.pipeline``'s main on the chosen catalog."""
    from icefloe.cli import pipeline

    with catalog_environment(uri, warehouse):
        return pipeline.main(pipeline_args)


@contextmanager
def catalog_environment(uri: str | None, warehouse: str | None) -> Iterator[None]:
    """Point ``load_catalog()``'s environment variables at ``uri`` / ``warehouse`` (when given) meanwhile."""
    wanted = {ENV_CATALOG_URI: uri, ENV_WAREHOUSE: warehouse}
    saved = {name: os.environ.get(name) for name in wanted}
    os.environ.update({name: value for name, value in wanted.items() if value})
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


# -- reports ----------------------------------------------------------------------------------------


def expire_report(result: ExpireResult, kept_files: bool) -> list[str]:
    """What an expiry did: snapshots, refs, deleted files, and any file it could not delete."""
    ids = result.expired_snapshot_ids
    metadata, content = len(result.deleted_metadata_files), len(result.deleted_content_files)
    if kept_files:
        files_note = "(--keep-files)"
    else:
        files_note = f"({metadata} metadata, {content} content)"
    rows = [
        ("expired snapshots", str(len(ids)), ", ".join(map(str, ids))),
        ("removed refs", str(len(result.removed_refs)), ", ".join(result.removed_refs)),
        ("deleted files", str(metadata + content), files_note),
    ]
    if result.failed_deletes:
        rows.append(("could not delete", str(len(result.failed_deletes)), "(now orphan files)"))
    return describe.aligned(rows) + [describe.INDENT + path for path in result.failed_deletes]


def orphan_report(result: OrphanResult) -> list[str]:
    """The orphan files found, whether they were deleted, and any that could not be."""
    found = len(result.orphan_files)
    if not found:
        note = ""
    elif not result.deleted:
        note = "(dry run: nothing deleted)"
    else:
        note = f"(deleted {found - len(result.failed_deletes)})"
    lines = describe.aligned([("orphan files", str(found), note)])
    lines += [describe.INDENT + path for path in result.orphan_files]
    if result.failed_deletes:
        lines.append(f"could not delete {len(result.failed_deletes)}:")
        lines += [describe.INDENT + path for path in result.failed_deletes]
    return lines


if __name__ == "__main__":
    raise SystemExit(main())
