"""Another process committing to a table while a streaming query reads it (run as a script).

``python -m tests.spark.history_writer URI WAREHOUSE TABLE N`` commits N snapshots: appends of ten
rows (ids ``10k .. 10k+9`` for the k-th commit), a merge-on-read delete every tenth commit and one
compaction; it prints the appended ids as JSON on its last line.
"""

from __future__ import annotations

import json
import sys

import pyarrow as pa

from icefloe.catalog import load_catalog
from icefloe.maintenance.rewrite_data_files import rewrite_data_files


def commit_history(uri: str, warehouse: str, identifier: str, snapshots: int) -> list[int]:
    """Commit ``snapshots`` snapshots; returns the ids appended."""
    table = load_catalog(uri=uri, warehouse=warehouse).load_table(identifier)
    appended: list[int] = []
    for k in range(snapshots):
        if k % 10 == 9:
            table.delete(f"id = {appended[-3]}", mode="merge-on-read")
        elif k == snapshots // 2:
            rewrite_data_files(table, rewrite_all=True)
        else:
            ids = list(range(10 * k, 10 * k + 10))
            table.append(pa.table({"id": pa.array(ids, pa.int64()), "k": pa.array([k] * 10, pa.int64())}))
            appended += ids
    return appended


if __name__ == "__main__":
    uri, warehouse, identifier, n = sys.argv[1:5]
    print(json.dumps(commit_history(uri, warehouse, identifier, int(n))))
