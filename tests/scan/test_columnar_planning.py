"""The columnar planner (Arrow-decoded manifests) must plan exactly what the object planner plans.

Both paths run on the acceptance corpus (every snapshot and every check's filter) and on randomly
generated v1/v2/v3 tables: all partition transforms, nulls and NaNs in partitions and bounds,
missing and odd-width bounds, deleted entries, inherited snapshot ids, sequence numbers and first
row ids, delete files of every kind. Tasks are compared field by field (data file, entry, deletes,
residual) together with the planning statistics.
"""

from __future__ import annotations

import decimal
import math
import random
import uuid
from pathlib import Path
from typing import Any

import pytest

from icefloe.errors import CorruptMetadata
from icefloe.expressions import ast
from icefloe.formats.avro import columnar as ac
from icefloe.formats.avro.manifest import write_manifest
from icefloe.formats.avro.manifest_list import write_manifest_list
from icefloe.formats.metadata.files import read_table_metadata
from icefloe.io.fileio import FileIO
from icefloe.scan.planner import PlanStats, plan_files
from icefloe.scan.table_scan import TableScan
from icefloe.scan.tasks import FileScanTask
from icefloe.spec.content import (
    DataFile,
    EntryStatus,
    FileContent,
    ManifestContent,
    ManifestEntry,
    ManifestFile,
)
from icefloe.spec.conversions import to_bytes
from icefloe.spec.partitioning import PartitionField, PartitionSpec
from icefloe.spec.schema import Schema
from icefloe.spec.snapshots import Snapshot
from icefloe.spec.sort_order import UNSORTED
from icefloe.spec.table_metadata import TableMetadata
from icefloe.spec.transforms import (
    BucketTransform,
    DayTransform,
    HourTransform,
    IdentityTransform,
    MonthTransform,
    TruncateTransform,
    VoidTransform,
    YearTransform,
)
from icefloe.spec.types import (
    BinaryType,
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    FixedType,
    FloatType,
    IcebergType,
    IntegerType,
    LongType,
    NestedField,
    StringType,
    TimestampNanoType,
    TimestampType,
    TimestamptzType,
    TimeType,
    UUIDType,
)
from icefloe.tree.read_seam import manifest_refs
from tests.scan.test_acceptance_fixtures import IcefloeBuilder
from tests.support.canonical import canonical
from tests.support.filter_expr import convert
from tests.support.fixtures import install_acceptance_fixtures, iter_checks, load_cases

pytestmark = pytest.mark.skipif(not ac.decoder_available(), reason="DataFusion is not installed")


# -- comparing plans -----------------------------------------------------------------------------


def plan_both(
    io: FileIO,
    md: TableMetadata,
    snapshot: Snapshot | None,
    row_filter: ast.Expression | None,
    schema: Schema,
) -> tuple[list[FileScanTask], PlanStats]:
    """Plan with both paths, assert they agree task by task; the columnar plan and its stats."""
    ref_stats, col_stats = PlanStats(), PlanStats()
    expected = plan_files(io, md, snapshot, row_filter, schema=schema, stats=ref_stats, columnar=False)
    got = plan_files(io, md, snapshot, row_filter, schema=schema, stats=col_stats, columnar=True)
    assert len(got) == len(expected), f"{row_filter}: {len(got)} tasks, object path {len(expected)}"
    for g, e in zip(got, expected, strict=True):
        assert canonical(g.entry) == canonical(e.entry), f"{row_filter}: {e.file_path}"
        assert canonical(g.deletes) == canonical(e.deletes), f"{row_filter}: deletes of {e.file_path}"
        assert str(g.residual) == str(e.residual) and g.residual == e.residual, f"{row_filter}: {e.file_path}"
    for name in (
        "manifests_total",
        "manifests_skipped",
        "files_considered",
        "files_selected",
        "delete_files",
    ):
        assert getattr(col_stats, name) == getattr(ref_stats, name), name
    assert ref_stats.manifests_columnar == 0
    return got, col_stats


# -- the acceptance corpus ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def corpus() -> dict[str, TableMetadata]:
    install_acceptance_fixtures()
    io = FileIO()
    return {case["case"]: read_table_metadata(io, case["metadata_location"]) for case in load_cases()}


def test_every_snapshot_of_the_corpus_plans_alike(corpus: dict[str, TableMetadata]) -> None:
    io = FileIO()
    columnar = 0
    for md in corpus.values():
        for snap in md.snapshots:
            _, stats = plan_both(io, md, snap, None, md.schema())
            columnar += stats.manifests_columnar
            if snap.root_manifest is None:
                assert stats.manifests_fallback == 0  # every corpus manifest decodes through Arrow
    assert columnar > 50  # the Arrow path really ran


CHECKS = [pytest.param(case, check, id=f"{case['case']}-{check['id']}") for case, check in iter_checks()]


@pytest.mark.parametrize(("case", "check"), CHECKS)
def test_corpus_checks_plan_alike(
    corpus: dict[str, TableMetadata], case: dict[str, Any], check: dict[str, Any]
) -> None:
    md = corpus[case["case"]]
    row_filter = convert(check.get("filter_expr"), IcefloeBuilder())
    scan = TableScan(FileIO(), md, row_filter, snapshot_id=check.get("snapshot_id"), ref=check.get("ref"))
    plan_both(scan.io, md, scan.snapshot(), row_filter, scan.schema())


# -- random tables ------------------------------------------------------------------------------

COLUMNS: list[tuple[str, IcebergType]] = [
    ("id", LongType()),
    ("i", IntegerType()),
    ("d", DateType()),
    ("ts", TimestampType()),
    ("tstz", TimestamptzType()),
    ("tsn", TimestampNanoType()),
    ("t", TimeType()),
    ("s", StringType()),
    ("f", FloatType()),
    ("db", DoubleType()),
    ("dec", DecimalType(9, 2)),
    ("u", UUIDType()),
    ("b", BinaryType()),
    ("fx", FixedType(4)),
    ("bo", BooleanType()),
]
SCHEMA = Schema(*[NestedField(i + 1, n, t, False) for i, (n, t) in enumerate(COLUMNS)], schema_id=0)
FID = {n: i + 1 for i, (n, _) in enumerate(COLUMNS)}
TYPE = dict(COLUMNS)


def _spec(spec_id: int, *fields: tuple[str, Any]) -> PartitionSpec:
    return PartitionSpec(
        *[
            PartitionField(FID[src], 1000 + 10 * spec_id + i, t, f"p{i}_{src}")
            for i, (src, t) in enumerate(fields)
        ],
        spec_id=spec_id,
    )


SPECS = [
    _spec(
        0,
        ("i", IdentityTransform()),
        ("id", BucketTransform(8)),
        ("s", TruncateTransform(2)),
        ("ts", DayTransform()),
    ),
    _spec(
        1,
        ("d", YearTransform()),
        ("tstz", MonthTransform()),
        ("ts", HourTransform()),
        ("dec", IdentityTransform()),
    ),
    _spec(
        2,
        ("u", IdentityTransform()),
        ("f", IdentityTransform()),
        ("b", VoidTransform()),
        ("fx", IdentityTransform()),
    ),
    _spec(3),
    _spec(
        4,
        ("db", IdentityTransform()),
        ("tsn", DayTransform()),
        ("b", TruncateTransform(2)),
        ("bo", IdentityTransform()),
    ),
    _spec(
        5,
        ("t", IdentityTransform()),
        ("dec", BucketTransform(3)),
        ("i", TruncateTransform(10)),
        ("s", BucketTransform(4)),
    ),
]
UUIDS = [uuid.UUID(int=i * 0x1111_1111_1111_1111_1111) for i in range(1, 4)]
US_PER_DAY = 86_400_000_000


def value(rng: random.Random, t: IcebergType) -> Any:
    """A random value of a column type (internal representation), from a small domain."""
    if isinstance(t, LongType):
        return rng.randint(-100, 100)
    if isinstance(t, IntegerType):
        return rng.randint(-30, 30)
    if isinstance(t, DateType):
        return rng.randint(18_000, 18_800)
    if isinstance(t, TimestampType | TimestamptzType):
        return 1_600_000_000_000_000 + rng.randint(0, 40) * US_PER_DAY // 7
    if isinstance(t, TimestampNanoType):
        return (1_600_000_000_000_000 + rng.randint(0, 40) * US_PER_DAY // 3) * 1000
    if isinstance(t, TimeType):
        return rng.randint(0, 23) * 3_600_000_000
    if isinstance(t, StringType):
        return rng.choice(["", "a", "ab", "abc", "b", "bz", "héllo", "zz"])
    if isinstance(t, FloatType | DoubleType):
        return rng.choice([-1.5, -0.0, 0.0, 0.25, 2.5, 100.0, float("nan"), float("inf")])
    if isinstance(t, DecimalType):
        return decimal.Decimal(rng.randint(-500, 500)).scaleb(-2)
    if isinstance(t, UUIDType):
        return rng.choice(UUIDS)
    if isinstance(t, BinaryType):
        return rng.choice([b"", b"a", b"ab", b"\x00\xff", b"b"])
    if isinstance(t, FixedType):
        return rng.choice([b"aaaa", b"abcd", b"\x00\x00\x00\x01", b"zzzz"])
    assert isinstance(t, BooleanType)
    return rng.random() < 0.5


def _ordered(t: IcebergType, a: Any, b: Any) -> tuple[Any, Any]:
    if isinstance(t, FloatType | DoubleType) and (math.isnan(a) or math.isnan(b)):
        return a, b  # NaN bounds are written by old writers: readers must ignore them
    return (a, b) if a <= b else (b, a)


def metrics(rng: random.Random, rows: int) -> dict[str, Any]:
    """Random column metrics: some columns without bounds, some counts missing, odd widths sometimes."""
    lower: dict[int, bytes] = {}
    upper: dict[int, bytes] = {}
    nulls: dict[int, int] = {}
    nans: dict[int, int] = {}
    for name, t in COLUMNS:
        fid = FID[name]
        if rng.random() < 0.7:
            nulls[fid] = rng.choice([0, 0, 1, rows])
        if isinstance(t, FloatType | DoubleType) and rng.random() < 0.6:
            nans[fid] = rng.choice([0, 1, rows])
        if rng.random() < 0.25:
            continue
        lo, hi = _ordered(t, value(rng, t), value(rng, t))
        if rng.random() < 0.85:
            lower[fid] = to_bytes(t, lo)
        if rng.random() < 0.85:
            upper[fid] = to_bytes(t, hi)
        if isinstance(t, LongType) and rng.random() < 0.1:  # a bound written before int -> long
            lower[fid] = to_bytes(IntegerType(), max(-30, min(30, lo)))
    return {
        "value_counts": {FID["id"]: rows, FID["s"]: rows} if rng.random() < 0.8 else None,
        "null_value_counts": nulls or None,
        "nan_value_counts": nans if rng.random() < 0.8 else None,
        "lower_bounds": lower if rng.random() < 0.95 else None,
        "upper_bounds": upper if rng.random() < 0.95 else None,
        "column_sizes": {1: 10 * rows} if rng.random() < 0.5 else {},
    }


def partition_of(rng: random.Random, spec: PartitionSpec) -> tuple[Any, ...]:
    out = []
    for pf in spec.fields:
        source = TYPE[SCHEMA.find_column_name(pf.source_id) or ""]
        v = None if rng.random() < 0.1 else value(rng, source)
        out.append(None if v is None else pf.transform.apply(source, v))
    return tuple(out)


class RandomTable:
    """A random v1/v2/v3 table snapshot: several data and delete manifests over every spec."""

    def __init__(self, tmp_path: Path, seed: int, format_version: int) -> None:
        self.rng = rng = random.Random(seed)
        self.fv = fv = format_version
        self.io = FileIO()
        self.root = tmp_path / f"t{seed}_{fv}"
        (self.root / "metadata").mkdir(parents=True)
        self.md = TableMetadata(
            format_version=fv,
            table_uuid=str(uuid.UUID(int=seed)),
            location=f"file://{self.root}",
            last_updated_ms=0,
            last_column_id=len(COLUMNS),
            schemas=(SCHEMA,),
            current_schema_id=0,
            partition_specs=tuple(SPECS),
            default_spec_id=0,
            last_partition_id=max(pf.field_id for s in SPECS for pf in s.fields),
            sort_orders=(UNSORTED,),
            default_sort_order_id=0,
            properties={},
            next_row_id=0 if fv >= 3 else None,
        )
        self.data_files: list[DataFile] = []
        manifests = [self._data_manifest(i) for i in range(rng.randint(3, 11))]
        if fv >= 2:
            manifests += [self._delete_manifest(i) for i in range(rng.randint(1, 4))]
            rng.shuffle(manifests)
        list_path = str(self.root / "metadata" / "snap-1.avro")
        with open(list_path, "wb") as f:
            write_manifest_list(f, manifests, fv, 42, None, 9, 5_000 if fv >= 3 else None)
        self.snapshot = Snapshot(snapshot_id=42, timestamp_ms=0, sequence_number=9, manifest_list=list_path)

    def _file(self, i: int, spec: PartitionSpec, content: FileContent) -> DataFile:
        rng = self.rng
        rows = rng.choice([0, 1, 5, 10, 50]) if rng.random() > 0.03 else -1
        extra: dict[str, Any] = {}
        partition = partition_of(rng, spec)
        fmt = "parquet"
        targets = [f for f in self.data_files if f.spec_id == spec.spec_id]
        if content == FileContent.POSITION_DELETES:
            if targets and rng.random() < 0.6:
                target = rng.choice(targets)
                extra["referenced_data_file"] = target.file_path
                partition = target.partition
                if self.fv >= 3 and rng.random() < 0.7:  # a deletion vector
                    fmt = "puffin"
                    extra.update(content_offset=4 + i, content_size_in_bytes=40)
        elif content == FileContent.EQUALITY_DELETES:
            extra["equality_ids"] = (FID["id"],)
        elif self.fv >= 3 and rng.random() < 0.4:
            extra["first_row_id"] = rng.randint(0, 10_000)
        return DataFile(
            file_path=f"{self.md.location}/data/{content.name.lower()}-{len(self.data_files)}-{i}.{fmt}",
            file_format=fmt,
            record_count=rows,
            file_size_in_bytes=rng.randint(1, 10_000),
            content=content,
            spec_id=spec.spec_id,
            partition=partition,
            key_metadata=b"\x01" if rng.random() < 0.05 else None,
            split_offsets=(4,) if rng.random() < 0.5 else None,
            sort_order_id=0 if rng.random() < 0.5 else None,
            **metrics(rng, max(rows, 0)),
            **extra,
        )

    def _entry(self, df: DataFile) -> ManifestEntry:
        rng = self.rng
        status = rng.choice([EntryStatus.ADDED, EntryStatus.ADDED, EntryStatus.EXISTING, EntryStatus.DELETED])
        inherited = status == EntryStatus.ADDED and rng.random() < 0.8
        sid = None if inherited or rng.random() < 0.1 else rng.randint(1, 40)
        seq = None if self.fv == 1 or inherited or rng.random() < 0.1 else rng.randint(1, 8)
        fseq = None if seq is None else seq + rng.randint(0, 1)
        return ManifestEntry(status, sid, seq, fseq, df)

    def _write(
        self, name: str, entries: list[ManifestEntry], spec: PartitionSpec, fv: int, content: ManifestContent
    ) -> ManifestFile:
        path = str(self.root / "metadata" / name)
        with open(path, "wb") as f:
            m = write_manifest(f, entries, spec, SCHEMA, fv, content, None, path=path)  # type: ignore[arg-type]
        rng = self.rng
        seq = 0 if fv == 1 or rng.random() < 0.15 else rng.randint(1, 8)
        return m.with_changes(
            added_snapshot_id=rng.randint(1, 40),
            sequence_number=seq,
            min_sequence_number=seq,
            first_row_id=None if rng.random() < 0.7 else rng.randint(0, 100),
        )

    def _data_manifest(self, i: int) -> ManifestFile:
        spec = self.rng.choice(SPECS)
        # an upgraded table keeps its old v1 manifests
        fv = 1 if self.fv == 1 or self.rng.random() < 0.15 else self.fv
        files = [self._file(j, spec, FileContent.DATA) for j in range(self.rng.randint(0, 30))]
        self.data_files += files
        return self._write(f"data-{i}.avro", [self._entry(f) for f in files], spec, fv, ManifestContent.DATA)

    def _delete_manifest(self, i: int) -> ManifestFile:
        spec = SPECS[self.rng.choice(self.data_files).spec_id] if self.data_files else self.rng.choice(SPECS)
        kinds = [FileContent.POSITION_DELETES, FileContent.EQUALITY_DELETES]
        files = [self._file(j, spec, self.rng.choice(kinds)) for j in range(self.rng.randint(1, 12))]
        return self._write(
            f"deletes-{i}.avro", [self._entry(f) for f in files], spec, self.fv, ManifestContent.DELETES
        )


def random_filter(rng: random.Random, depth: int = 0) -> ast.Expression:
    """A random row filter over the schema's columns (comparisons, sets, nulls, NaNs, prefixes)."""
    roll = rng.random()
    if depth < 2 and roll < 0.3:
        left, right = random_filter(rng, depth + 1), random_filter(rng, depth + 1)
        return ast.And(left, right) if rng.random() < 0.5 else ast.Or(left, right)
    if depth < 2 and roll < 0.38:
        return ast.Not(random_filter(rng, depth + 1))
    name, t = rng.choice(COLUMNS)

    def literal() -> Any:
        v = value(rng, t)
        while isinstance(v, float) and (math.isnan(v) or math.isinf(v)):
            v = value(rng, t)
        return v

    ops: list[Any] = [ast.IsNull, ast.NotNull, "set", "notset"]
    if not isinstance(t, BooleanType):
        ops += [
            ast.EqualTo,
            ast.NotEqualTo,
            ast.LessThan,
            ast.LessThanOrEqual,
            ast.GreaterThan,
            ast.GreaterThanOrEqual,
        ] * 2
    else:
        ops += [ast.EqualTo, ast.NotEqualTo]
    if isinstance(t, FloatType | DoubleType):
        ops += [ast.IsNaN, ast.NotNaN]
    if isinstance(t, StringType):
        ops += [ast.StartsWith, ast.NotStartsWith]
    op = rng.choice(ops)
    if op in (ast.IsNull, ast.NotNull, ast.IsNaN, ast.NotNaN):
        return op(name)
    if op in ("set", "notset"):
        values = [literal() for _ in range(rng.randint(1, 4))]
        return ast.In(name, values) if op == "set" else ast.NotIn(name, values)
    return op(name, literal())


@pytest.mark.parametrize("format_version", [1, 2, 3])
@pytest.mark.parametrize("seed", range(6))
def test_random_tables_plan_alike(tmp_path: Path, seed: int, format_version: int) -> None:
    table = RandomTable(tmp_path, seed, format_version)
    rng = random.Random(seed * 7 + format_version)
    tasks, stats = plan_both(table.io, table.md, table.snapshot, None, SCHEMA)
    assert stats.manifests_columnar == stats.manifests_total and stats.manifests_fallback == 0
    assert len(tasks) == stats.files_considered
    selected = 0
    for _ in range(25):
        row_filter = random_filter(rng)
        got, _ = plan_both(table.io, table.md, table.snapshot, row_filter, SCHEMA)
        selected += len(got) < len(tasks)
    assert selected > 0  # some filters prune: the comparison is not only about keeping everything


def test_random_tables_exercise_inheritance(tmp_path: Path) -> None:
    """The generator covers what the comparison is meant to cover (or the test proves little)."""
    seen: set[str] = set()
    for fv in (1, 2, 3):
        for seed in range(6):
            table = RandomTable(tmp_path, seed, fv)
            for t in plan_files(table.io, table.md, table.snapshot, None, columnar=True):
                f = t.data_file
                seen.add(f"v{fv}")
                seen |= {"deletes"} if t.deletes else set()
                seen |= {"dv"} if any(d.delete_file.file_format == "puffin" for d in t.deletes) else set()
                seen |= {"row-id"} if f.first_row_id is not None else set()
                seen |= {"nan"} if any(isinstance(v, float) and math.isnan(v) for v in f.partition) else set()
                seen |= {"null"} if None in f.partition else set()
                seen |= {"unpartitioned"} if not f.partition else set()
                seen |= {"seq>0"} if (t.entry.sequence_number or 0) > 0 else set()
    assert seen >= {"v1", "v2", "v3", "deletes", "dv", "row-id", "nan", "null", "unpartitioned", "seq>0"}


def test_metrics_prefilter_and_partitions_prune_before_objects_are_built(tmp_path: Path) -> None:
    table = RandomTable(tmp_path, 3, 2)
    stats = PlanStats()
    everything = plan_files(table.io, table.md, table.snapshot, None)
    target = everything[len(everything) // 2].data_file
    bounds = target.lower_bounds or {}
    row_filter = (
        ast.EqualTo("id", int.from_bytes(bounds[FID["id"]], "little", signed=True))
        if FID["id"] in bounds and len(bounds[FID["id"]]) == 8
        else ast.EqualTo("id", 0)
    )
    got = plan_files(table.io, table.md, table.snapshot, row_filter, stats=stats)
    assert stats.manifests_columnar > 0 and len(got) <= len(everything)
    plan_both(table.io, table.md, table.snapshot, row_filter, SCHEMA)


# -- fallbacks ----------------------------------------------------------------------------------


def test_a_manifest_the_decoder_cannot_read_is_planned_by_the_object_path(tmp_path: Path) -> None:
    table = RandomTable(tmp_path, 1, 2)
    first = manifest_refs(table.io, table.md, table.snapshot)[0].manifest_path
    real = ac.read_manifest_columns

    def refuse(io: Any, location: str, *args: Any, **kw: Any) -> ac.ManifestColumns:
        if location == first:
            raise ac.ColumnarUnsupported("not today")
        return real(io, location, *args, **kw)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(ac, "read_manifest_columns", refuse)
        _, stats = plan_both(table.io, table.md, table.snapshot, None, SCHEMA)
        _, filtered = plan_both(table.io, table.md, table.snapshot, ast.GreaterThan("i", 0), SCHEMA)
    assert stats.manifests_fallback == 1 and stats.manifests_columnar == stats.manifests_total - 1
    assert filtered.manifests_fallback <= 1


def test_without_the_decoder_planning_uses_the_object_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import icefloe.scan.planner as planner

    table = RandomTable(tmp_path, 2, 3)
    expected = plan_files(table.io, table.md, table.snapshot, None, columnar=True)
    monkeypatch.setattr(planner, "decoder_available", lambda: False)
    stats = PlanStats()
    got = plan_files(table.io, table.md, table.snapshot, None, stats=stats)
    assert stats.manifests_columnar == 0 and stats.manifests_fallback == 0
    assert [canonical(t.entry) for t in got] == [canonical(t.entry) for t in expected]


def test_a_corrupt_manifest_fails_the_same_way_on_both_paths(tmp_path: Path) -> None:
    table = RandomTable(tmp_path, 4, 2)
    refs = manifest_refs(table.io, table.md, table.snapshot)
    victim = Path(
        next(m for m in refs if (m.added_files_count or 0) + (m.existing_files_count or 0) > 5).manifest_path
    )
    data = victim.read_bytes()
    victim.write_bytes(data[: len(data) - 300])  # truncated in the middle of its block
    for columnar in (False, True):
        with pytest.raises(CorruptMetadata, match=victim.name):
            plan_files(table.io, table.md, table.snapshot, None, columnar=columnar)


def test_tasks_survive_pickling(tmp_path: Path) -> None:
    import pickle

    table = RandomTable(tmp_path, 5, 3)
    tasks = plan_files(table.io, table.md, table.snapshot, ast.GreaterThan("i", -10), columnar=True)
    assert tasks
    again = pickle.loads(pickle.dumps(tasks))
    assert [canonical(t) for t in again] == [canonical(t) for t in tasks]
    assert all(type(t.data_file.lower_bounds) in (dict, type(None)) for t in again)


def test_a_manifest_list_rewritten_in_place_is_read_again(tmp_path: Path) -> None:
    table = RandomTable(tmp_path, 0, 2)
    before = plan_files(table.io, table.md, table.snapshot, None)
    refs = manifest_refs(table.io, table.md, table.snapshot)
    assert len(refs) > 1 and manifest_refs(table.io, table.md, table.snapshot) == refs  # cached copy
    list_path = table.snapshot.manifest_list or ""
    with open(list_path, "wb") as f:  # not something Iceberg does; the cache must still notice
        write_manifest_list(f, refs[:1], 2, 42, None, 9, None)
    assert manifest_refs(table.io, table.md, table.snapshot) == refs[:1]
    plan_both(table.io, table.md, table.snapshot, None, SCHEMA)
    assert before  # the first plan saw the whole list
