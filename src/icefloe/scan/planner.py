"""Scan planning: which data files a query must read, with their deletes and residual filters.

Pruning happens in three steps, cheapest first: manifests (partition summaries; for v4 leaves,
their aggregated column stats), entries (partition values projected through each spec's
transforms), then files (column metrics).

Snapshots are planned columnarly when DataFusion (the Avro-to-Arrow decoder) is installed:
manifests (v1–v3 Avro manifests and v4 Parquet leaves alike, through the read seam) are decoded
to Arrow and pruned there, and objects are built for the selected entries only
(:mod:`icefloe.scan.columnar_planner`). The object path (one object per entry) is the reference
and the fallback for manifests the Arrow decoder cannot read and for a v4 root's inline entries.
Both select the same entries; ``columnar=False`` forces the object path.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import repeat
from typing import Any

from icefloe.expressions.ast import AlwaysTrue, Expression
from icefloe.expressions.evaluators import (
    InclusiveMetricsEvaluator,
    ManifestEvaluator,
    PartitionEvaluator,
)
from icefloe.expressions.residuals import residual_for
from icefloe.formats.avro.columnar import decoder_available
from icefloe.formats.frozen_builders import fast_constructor
from icefloe.io.fileio import FileIO
from icefloe.scan.columnar_planner import EntryFilters, select_entries
from icefloe.scan.delete_index import DeleteIndex
from icefloe.scan.tasks import FileScanTask
from icefloe.spec.content import FileContent, ManifestContent, ManifestEntry, ManifestFile
from icefloe.spec.partitioning import PartitionSpec
from icefloe.spec.schema import Schema
from icefloe.spec.snapshots import Snapshot
from icefloe.spec.table_metadata import TableMetadata
from icefloe.tree.read_seam import live_entries, live_manifest_refs
from icefloe.tree.v4_read import stats_manifest_filter

_new_task = fast_constructor(FileScanTask)
"""Builds ``FileScanTask`` objects 3–4x faster than their frozen ``__init__`` (a million per plan)."""


@dataclass
class PlanStats:
    """What planning looked at and skipped (useful for tests and `explain`)."""

    manifests_total: int = 0
    manifests_skipped: int = 0
    files_considered: int = 0
    files_selected: int = 0
    delete_files: int = 0
    manifests_columnar: int = 0
    """Manifests decoded to Arrow and pruned columnarly."""
    manifests_fallback: int = 0
    """Manifests the columnar path handed to the object reader (the Arrow decoder could not read them)."""


def plan_files(
    io: FileIO,
    md: TableMetadata,
    snapshot: Snapshot | None,
    row_filter: Expression | None = None,
    schema: Schema | None = None,
    case_sensitive: bool = True,
    stats: PlanStats | None = None,
    *,
    columnar: bool | None = None,
) -> list[FileScanTask]:
    """Plan a scan of ``snapshot``: the data files that may hold rows matching ``row_filter``.

    ``columnar`` chooses how manifests are read: None (default) columnarly when the Arrow
    decoder is installed, False through the object path, True columnarly (manifests the decoder
    cannot read still fall back to the object path).
    """
    if snapshot is None:
        return []
    row_filter = row_filter if row_filter is not None else AlwaysTrue()
    schema = schema or md.schema()
    specs = md.specs_by_id()
    stats = stats if stats is not None else PlanStats()
    filtering = not isinstance(row_filter, AlwaysTrue)

    manifest_evaluators: dict[int, ManifestEvaluator] = {}
    partition_evaluators: dict[int, PartitionEvaluator] = {}
    if filtering:
        for spec_id, spec in specs.items():
            manifest_evaluators[spec_id] = ManifestEvaluator(spec, schema, row_filter, case_sensitive)
            partition_evaluators[spec_id] = PartitionEvaluator(spec, schema, row_filter, case_sensitive)
    metrics = InclusiveMetricsEvaluator(schema, row_filter, case_sensitive) if filtering else None
    # v4 leaf references have no partition summaries: prune them on their aggregated stats
    leaf_stats = stats_manifest_filter(schema, row_filter, case_sensitive) if filtering else None

    def keep_manifest(m: ManifestFile) -> bool:
        stats.manifests_total += 1
        if not filtering:
            return True
        evaluator = manifest_evaluators.get(m.partition_spec_id)
        keep = evaluator is None or evaluator.eval(m)
        # Deletes apply only within their own spec and partition (or everywhere, for an
        # unpartitioned spec, whose evaluator keeps everything), so partition pruning is safe for
        # them; column stats of delete files say nothing about the data rows, so only data skip on them.
        if m.content != ManifestContent.DELETES:
            keep = keep and (leaf_stats is None or leaf_stats(m))
        if not keep:
            stats.manifests_skipped += 1
        return keep

    def keep_entry(e: ManifestEntry) -> bool:
        f = e.data_file
        if f.content != FileContent.DATA:
            if not filtering:
                return True
            delete_evaluator = partition_evaluators.get(f.spec_id)
            return delete_evaluator is None or delete_evaluator.eval(f.partition)
        stats.files_considered += 1
        if not filtering:
            return True
        evaluator = partition_evaluators.get(f.spec_id)
        if evaluator is not None and not evaluator.eval(f.partition):
            return False
        return metrics is None or metrics.eval(f)

    data_entries: list[ManifestEntry] = []
    delete_entries: list[ManifestEntry] = []
    if columnar or (columnar is None and decoder_available()):
        filters = EntryFilters(partition_evaluators, metrics)
        selected = select_entries(io, md, live_manifest_refs(io, md, snapshot, keep_manifest), filters)
        data_entries, delete_entries = selected.data, selected.deletes
        stats.files_considered += selected.files_considered
        stats.manifests_columnar += selected.manifests_columnar
        stats.manifests_fallback += selected.manifests_fallback
    else:
        for entry in live_entries(io, md, snapshot, manifest_filter=keep_manifest, entry_filter=keep_entry):
            if entry.data_file.content == FileContent.DATA:
                data_entries.append(entry)
            else:
                delete_entries.append(entry)
    stats.delete_files = len(delete_entries)
    tasks = _tasks(
        data_entries, DeleteIndex(delete_entries, specs), specs, schema, row_filter, case_sensitive
    )
    stats.files_selected = len(tasks)
    return tasks


def _tasks(
    data_entries: list[ManifestEntry],
    index: DeleteIndex,
    specs: dict[int, PartitionSpec],
    schema: Schema,
    row_filter: Expression,
    case_sensitive: bool,
) -> list[FileScanTask]:
    """One task per data entry: its deletes and its residual (computed once per distinct partition)."""
    if isinstance(row_filter, AlwaysTrue):
        everything = AlwaysTrue()
        n = len(data_entries)
        if index.is_empty and all(e.data_file.deletion_vector is None for e in data_entries):
            return list(map(_new_task, data_entries, repeat((), n), repeat(everything, n)))
        return [_new_task(e, index.deletes_for(e), everything) for e in data_entries]
    residuals: dict[tuple[int, Any], Expression] = {}
    tasks = []
    for entry in data_entries:
        f = entry.data_file
        key = (f.spec_id, f.partition)
        residual = residuals.get(key)
        if residual is None:
            residual = residual_for(specs[f.spec_id], schema, row_filter, f.partition, case_sensitive)
            residuals[key] = residual
        tasks.append(_new_task(entry, index.deletes_for(entry), residual))
    return tasks
