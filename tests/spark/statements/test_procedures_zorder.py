"""CALL icefloe.system.rewrite_data_files(strategy => 'sort', sort_order => 'zorder(c1, c2)'): the
files a z-ordered rewrite writes are narrow on both columns, where a linear sort's are narrow on
its first column only; every row is kept."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from icefloe.catalog.base import Catalog
from icefloe.errors import Unsupported, ValidationError
from icefloe.io.fileio import local_path
from icefloe.spark import sql

SIDE = 64  # a SIDE x SIDE grid of (c1, c2)
PIECES = 16


def rows(df: Any) -> list[tuple[Any, ...]]:
    return sorted(tuple(r) for r in df.collect())


def _grid_table(catalog: Catalog, spark: Any, name: str, fv: int) -> list[tuple[int, int, str]]:
    """One data file holding the grid in a scrambled order; returns the rows."""
    sql(
        spark,
        f"CREATE TABLE icefloe.{name} (c1 INT, c2 INT, payload STRING) USING iceberg "
        f"TBLPROPERTIES ('format-version' = '{fv}')",
    )
    cells = [(i * 2749) % (SIDE * SIDE) for i in range(SIDE * SIDE)]  # a permutation: 2749 is odd
    data = [(p // SIDE, p % SIDE, f"row-{p}") for p in cells]
    c1, c2, payload = zip(*data, strict=True)
    catalog.load_table(name).append(
        pa.table(
            {"c1": pa.array(c1, pa.int32()), "c2": pa.array(c2, pa.int32()), "payload": pa.array(payload)}
        )
    )
    return sorted(data)


def _rewrite(spark: Any, catalog: Catalog, name: str, order: str) -> list[tuple[int, int, int, int]]:
    """Rewrite the one file into about PIECES files in ``order``; each file's (c1, c2) ranges."""
    ((size,),) = rows(sql(spark, f"SELECT file_size_in_bytes FROM icefloe.{name}.data_files"))
    out = sql(
        spark,
        f"CALL icefloe.system.rewrite_data_files(table => '{name}', strategy => 'sort', "
        f"sort_order => '{order}', options => map('rewrite-all', 'true', "
        f"'target-file-size-bytes', '{size // PIECES + 1}'))",
    )
    assert out.collect()[0][0] == 1
    ranges = []
    for (path,) in rows(sql(spark, f"SELECT file_path FROM icefloe.{name}.data_files")):
        data = pq.read_table(local_path(path), columns=["c1", "c2"])
        c1, c2 = data.column("c1").to_pylist(), data.column("c2").to_pylist()
        ranges.append((min(c1), max(c1), min(c2), max(c2)))
    assert len(ranges) >= PIECES
    return ranges


def _files_for(catalog: Catalog, name: str, condition: str) -> int:
    return len(catalog.load_table(name).scan(condition).plan_files())


@pytest.mark.parametrize("fv", [2, 4])
def test_zorder_rewrite_narrows_both_columns(spark: Any, catalog: Catalog, table_name: str, fv: int) -> None:
    linear_name, z_name = f"{table_name}_linear", f"{table_name}_z"
    expected = _grid_table(catalog, spark, linear_name, fv)
    assert _grid_table(catalog, spark, z_name, fv) == expected
    linear = _rewrite(spark, catalog, linear_name, "c1, c2")
    zordered = _rewrite(spark, catalog, z_name, "zorder(c1, c2)")
    for name in (linear_name, z_name):  # exactly the same rows, nothing lost or repeated
        assert rows(sql(spark, f"SELECT * FROM icefloe.{name}")) == expected
    widest = SIDE - 1
    # a linear sort: narrow on c1, but every file spans all of c2
    assert all(hi - lo == widest for _, _, lo, hi in linear)
    # z-order: narrow on both columns; on average a quarter of the grid's side or less
    z_c1 = [hi - lo for lo, hi, _, _ in zordered]
    z_c2 = [hi - lo for _, _, lo, hi in zordered]
    assert sum(z_c1) / len(z_c1) <= SIDE / 4 and sum(z_c2) / len(z_c2) <= SIDE / 4
    assert max(z_c2) < widest and sum(z_c2) < sum(hi - lo for _, _, lo, hi in linear) / 2
    # so a filter on the second column prunes files too, which the linear sort cannot
    assert _files_for(catalog, linear_name, "c2 = 5") == len(linear)
    assert _files_for(catalog, z_name, "c2 = 5") <= len(zordered) // 2
    assert _files_for(catalog, z_name, "c1 = 5") <= len(zordered) // 2


def test_zorder_refusals_write_nothing(spark: Any, catalog: Catalog, table_name: str) -> None:
    t = f"icefloe.{table_name}"
    sql(spark, f"CREATE TABLE {t} (id BIGINT, p INT, tags ARRAY<STRING>) USING iceberg PARTITIONED BY (p)")
    sql(spark, f"INSERT INTO {t} VALUES (1, 1, array('a')), (2, 1, array('b'))")
    sql(spark, f"INSERT INTO {t} VALUES (3, 1, array('c'))")
    snapshots = len(catalog.load_table(table_name).snapshots())
    ((files,),) = rows(sql(spark, f"SELECT count(*) FROM {t}.data_files"))
    call = f"CALL icefloe.system.rewrite_data_files(table => '{t}', strategy => 'sort', sort_order => "
    with pytest.raises(ValidationError, match="identity partition"):
        sql(spark, call + "'zorder(id, p)')")
    with pytest.raises(Unsupported, match="tags"):
        sql(spark, call + "'zorder(id, tags)')")
    with pytest.raises(ValidationError, match="z-order"):
        sql(spark, call + "'zorder()')")
    assert len(catalog.load_table(table_name).snapshots()) == snapshots
    # one column is allowed (a plain sort by its order-preserving bytes)
    out = sql(spark, call + "'zorder(id)')")
    assert out.collect()[0][:2] == (files, 1)
    assert rows(sql(spark, f"SELECT id FROM {t}")) == [(1,), (2,), (3,)]
