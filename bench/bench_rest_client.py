"""The REST client's per-append steps that grow with the table's history, timed alone.

A REST commit's client writes a v1-v3 manifest list that repeats the parent list's manifests, and
reads the service's reply, which repeats every snapshot and log entry it holds. Both once cost
Python work per carried item (issue 16). Each step is timed as the minimum of ``--repeat`` runs of
``--number`` calls, so other processes' load raises the figures less than it raises an append's:

- ``write_manifest_list`` of ``--manifests`` manifests carried from the parent list (as read) plus
  one new one;
- ``table_metadata_from_json`` of a reply of ``--snapshots`` snapshots with as many log entries,
  with the metadata the client proposed held (``known=``), v2 and v4 (relative locations);
- ``read_manifest`` of a one-entry manifest (the header's schema seen before);
- ``content_entries_table`` of one new v4 root row (a one-row append's file, with its column
  statistics): the Arrow row of the only entry a small append encodes from objects.
"""

from __future__ import annotations

import argparse
import dataclasses
import io
import timeit
from collections.abc import Callable
from typing import Any

from bench._common import command_line, load_average, print_environment, print_table
from icefloe.formats.avro.manifest import read_manifest, write_manifest
from icefloe.formats.avro.manifest_list import read_manifest_list, write_manifest_list
from icefloe.formats.v4.content_entry import content_entries_table
from icefloe.spec.content import DataFile, EntryStatus, ManifestContent, ManifestEntry, ManifestFile
from icefloe.spec.conversions import to_bytes
from icefloe.spec.json_codec import table_metadata_from_json, table_metadata_to_dict
from icefloe.spec.partitioning import PartitionSpec
from icefloe.spec.schema import Schema
from icefloe.spec.types import LongType, NestedField, StringType
from icefloe.spec.updates import new_table_metadata

LOCATION = "file:///warehouse/bench/small"


def best_us(call: Callable[[], Any], number: int, repeat: int) -> float:
    """The fastest of ``repeat`` runs of ``number`` calls, per call, in microseconds."""
    return min(timeit.repeat(call, number=number, repeat=repeat)) / number * 1e6


def carried_manifests(count: int) -> list[ManifestFile]:
    """``count`` one-file manifests as a parent list reads them back."""
    written = [
        ManifestFile(
            f"{LOCATION}/metadata/{i:032x}-m0.avro",
            7000,
            0,
            sequence_number=i + 1,
            min_sequence_number=i + 1,
            added_snapshot_id=10**18 + i,
            added_files_count=1,
            existing_files_count=0,
            deleted_files_count=0,
            added_rows_count=10,
            existing_rows_count=0,
            deleted_rows_count=0,
            partitions=(),
        )
        for i in range(count)
    ]
    buf = io.BytesIO()
    write_manifest_list(buf, written, 2, 10**18 + count, 10**18 + count - 1, count)
    return read_manifest_list(buf.getvalue())


def reply(format_version: int, snapshots: int) -> dict[str, Any]:
    """A commit's reply: ``snapshots`` appends, their snapshot log and a metadata log as long."""
    relative = format_version >= 4
    items, snapshot_log, metadata_log = [], [], []
    for i in range(snapshots):
        snapshot: dict[str, Any] = {
            "sequence-number": i + 1,
            "snapshot-id": 10**18 + i,
            "timestamp-ms": 1_795_000_000_000 + i,
            "summary": {"operation": "append", "added-data-files": "1", "added-records": "10"},
            "schema-id": 0,
        }
        if i:
            snapshot["parent-snapshot-id"] = 10**18 + i - 1
        if relative:
            snapshot.update({"root-manifest": f"metadata/snap-{i}-root.parquet", "first-row-id": 10 * i})
            snapshot["added-rows"] = 10
        else:
            snapshot["manifest-list"] = f"{LOCATION}/metadata/snap-{i}.avro"
        items.append(snapshot)
        snapshot_log.append({"timestamp-ms": 1_795_000_000_000 + i, "snapshot-id": 10**18 + i})
        file = f"metadata/{i:05d}.metadata.json"
        metadata_log.append(
            {
                "timestamp-ms": 1_795_000_000_000 + i,
                "metadata-file": file if relative else f"{LOCATION}/{file}",
            }
        )
    schema = Schema(NestedField(1, "x", LongType(), required=True))
    data = table_metadata_to_dict(
        new_table_metadata(schema, None, None, LOCATION, format_version=format_version)
    )
    data.update(
        {
            "last-sequence-number": snapshots,
            "current-snapshot-id": 10**18 + snapshots - 1,
            "refs": {"main": {"snapshot-id": 10**18 + snapshots - 1, "type": "branch"}},
            "snapshots": items,
            "snapshot-log": snapshot_log,
            "metadata-log": metadata_log,
        }
    )
    if format_version >= 3:
        data["next-row-id"] = 10 * snapshots
    return data


def one_entry_manifest() -> bytes:
    schema = Schema(NestedField(1, "x", LongType(), required=True))
    data_file = DataFile(
        file_path=f"{LOCATION}/data/a.parquet",
        file_format="parquet",
        record_count=10,
        file_size_in_bytes=1000,
    )
    entry = ManifestEntry(EntryStatus.ADDED, 1, 1, 1, data_file)
    buf = io.BytesIO()
    write_manifest(buf, [entry], PartitionSpec(), schema, 2, ManifestContent.DATA, 1)
    return buf.getvalue()


def new_root_row() -> tuple[ManifestEntry, Schema]:
    """The ADDED root row of a one-row append to a table of (id long, s string), as the client
    makes it (a new object each time: no earlier encoding of it is reused)."""
    schema = Schema(NestedField(1, "id", LongType(), required=True), NestedField(2, "s", StringType()))
    data_file = DataFile(
        file_path=f"{LOCATION}/data/00000-0-a.parquet",
        file_format="parquet",
        record_count=1,
        file_size_in_bytes=1032,
        column_sizes={1: 80, 2: 70},
        value_counts={1: 1, 2: 1},
        null_value_counts={1: 0, 2: 0},
        lower_bounds={1: to_bytes(LongType(), 7), 2: to_bytes(StringType(), "row 7")},
        upper_bounds={1: to_bytes(LongType(), 7), 2: to_bytes(StringType(), "row 7")},
        split_offsets=(4,),
        first_row_id=7,
    )
    return ManifestEntry(EntryStatus.ADDED, 9, 8, 8, data_file), schema


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--manifests", type=int, default=60, help="manifests carried from the parent list")
    parser.add_argument("--snapshots", type=int, default=110, help="snapshots (and log entries) in the reply")
    parser.add_argument("--number", type=int, default=200, help="calls per timed run")
    parser.add_argument("--repeat", type=int, default=9, help="timed runs; the fastest counts")
    args = parser.parse_args()
    print_environment(
        "icefloe REST client: history-bound steps of one append",
        command_line("bench.bench_rest_client"),
        vars(args),
    )

    rows = []
    parents = carried_manifests(args.manifests)
    new = parents[0].with_changes(manifest_path=f"{LOCATION}/metadata/new-m0.avro", sequence_number=-1)

    def write_list() -> None:
        write_manifest_list(io.BytesIO(), [new, *parents], 2, 7, 6, args.manifests + 1, decoded=parents)

    rows.append(
        (f"write_manifest_list, {args.manifests} carried + 1", best_us(write_list, args.number, args.repeat))
    )
    for fv in (2, 4):
        data = reply(fv, args.snapshots)
        before = dict(data, **{k: data[k][:-1] for k in ("snapshots", "snapshot-log", "metadata-log")})
        held = table_metadata_from_json(before)
        proposed = held.with_changes(
            snapshots=(*held.snapshots, table_metadata_from_json(data).snapshots[-1]),
        )
        assert table_metadata_from_json(data, known=proposed) == table_metadata_from_json(data)
        label = f"reply parse, v{fv}, {args.snapshots} snapshots, held metadata"
        rows.append(
            (
                label,
                best_us(
                    lambda d=data, p=proposed: table_metadata_from_json(d, known=p), args.number, args.repeat
                ),
            )
        )
    manifest = one_entry_manifest()
    rows.append(
        ("read_manifest, one entry", best_us(lambda: read_manifest(manifest), args.number, args.repeat))
    )
    entry, table_schema = new_root_row()

    def encode_root_row() -> None:
        content_entries_table(
            [dataclasses.replace(entry)],
            table_schema=table_schema,
            specs={0: PartitionSpec()},
            kind="root",
            table_location=LOCATION,
        )

    rows.append(
        ("content_entries_table, one new root row", best_us(encode_root_row, args.number, args.repeat))
    )
    print_table("steps, fastest run", ["step", "per call"], [(label, f"{us:,.0f} us") for label, us in rows])
    print(f"load avg: {load_average()} (1/5/15 min) at the end")


if __name__ == "__main__":
    main()
