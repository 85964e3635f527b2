"""Server-side scan planning: ``POST .../tables/{table}/plan`` answered by icefloe's planner.

Planning is synchronous: the answer is a completed result (``status: completed``) holding every
``FileScanTask`` and the delete files they reference, with a fresh ``plan-id``; no plan tasks are
issued, so ``POST .../tasks`` answers 404. The result is kept for a while (``plan_results``):
``GET .../plan/{plan-id}`` fetches it again, ``DELETE`` releases it. Content files are written in
the spec's ``ContentFile`` JSON (partition values and bounds in the single-value JSON form); each
task's residual filter is the request's filter (always a valid residual), or ``true``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from icefloe.errors import NoSuchTable, NotFound, ValidationError
from icefloe.expressions.ast import AlwaysTrue, Expression
from icefloe.expressions.json_form import expression_from_json
from icefloe.scan.planner import plan_files
from icefloe.server.auth import READ
from icefloe.server.checks import namespace_from_path, table_from_path
from icefloe.server.commits import current_state
from icefloe.server.context import Call, Reply, ServerState
from icefloe.server.errors import HttpError, bad_request, not_found
from icefloe.server.plan_results import TableKey
from icefloe.spec.content import DataFile, FileContent
from icefloe.spec.conversions import from_bytes, to_json_value
from icefloe.spec.schema import Schema
from icefloe.spec.table_metadata import TableMetadata

_CONTENT = {
    FileContent.DATA: "data",
    FileContent.POSITION_DELETES: "position-deletes",
    FileContent.EQUALITY_DELETES: "equality-deletes",
}


def _count_map(values: Mapping[int, int] | None) -> dict[str, list[int]] | None:
    if not values:
        return None
    keys = sorted(values)
    return {"keys": keys, "values": [int(values[k]) for k in keys]}


def _value_map(values: Mapping[int, bytes] | None, schema: Schema) -> dict[str, list[Any]] | None:
    if not values:
        return None
    keys, out = [], []
    for field_id in sorted(values):
        try:
            field_type = schema.find_type(field_id)
            value = to_json_value(field_type, from_bytes(field_type, values[field_id]))
        except Exception:
            continue
        keys.append(field_id)
        out.append(value)
    return {"keys": keys, "values": out} if keys else None


def content_file_json(data_file: DataFile, md: TableMetadata, schema: Schema) -> dict[str, Any]:
    """The spec's ``ContentFile`` JSON of a data or delete file."""
    spec = md.spec_by_id(data_file.spec_id)
    partition_type = spec.partition_type(schema)
    partition = [
        to_json_value(field.field_type, value) if value is not None else None
        for field, value in zip(partition_type.fields, data_file.partition, strict=False)
    ]
    out: dict[str, Any] = {
        "spec-id": data_file.spec_id,
        "partition": partition,
        "content": _CONTENT[data_file.content],
        "file-path": data_file.file_path,
        "file-format": data_file.file_format.lower(),
        "file-size-in-bytes": data_file.file_size_in_bytes,
        "record-count": data_file.record_count,
    }
    optional = {
        "split-offsets": list(data_file.split_offsets) if data_file.split_offsets else None,
        "sort-order-id": data_file.sort_order_id,
        "first-row-id": data_file.first_row_id if data_file.content == FileContent.DATA else None,
        "column-sizes": _count_map(data_file.column_sizes),
        "value-counts": _count_map(data_file.value_counts),
        "null-value-counts": _count_map(data_file.null_value_counts),
        "nan-value-counts": _count_map(data_file.nan_value_counts),
        "lower-bounds": _value_map(data_file.lower_bounds, schema),
        "upper-bounds": _value_map(data_file.upper_bounds, schema),
        "equality-ids": list(data_file.equality_ids) if data_file.equality_ids else None,
        "referenced-data-file": data_file.referenced_data_file,
        "content-offset": data_file.content_offset,
        "content-size-in-bytes": data_file.content_size_in_bytes,
    }
    out.update({k: v for k, v in optional.items() if v is not None})
    return out


def _body(call: Call) -> dict[str, Any]:
    if call.body is None:
        return {}
    if not isinstance(call.body, dict):
        raise bad_request("the request body must be a JSON object")
    return call.body


def plan_table_scan(state: ServerState, call: Call) -> Reply:
    """POST /namespaces/{namespace}/tables/{table}/plan"""
    namespace = namespace_from_path(call.path["namespace"])
    namespace, name = table_from_path(namespace, call.path["table"])
    call.principal.require(namespace, READ)
    body = _body(call)
    if body.get("start-snapshot-id") is not None or body.get("end-snapshot-id") is not None:
        from icefloe.errors import Unsupported

        raise Unsupported("incremental scan planning is not supported")
    found = current_state(state.catalog, namespace, name)
    if found is None:
        raise NoSuchTable(f"table {'.'.join((*namespace, name))!r} does not exist")
    _, md = found
    snapshot_id = body.get("snapshot-id")
    if snapshot_id is not None and type(snapshot_id) is not int:
        raise bad_request("snapshot-id must be an integer")
    try:
        snapshot = md.snapshot_by_id(snapshot_id) if snapshot_id is not None else md.current_snapshot()
    except NotFound as exc:
        raise ValidationError(str(exc)) from None
    case_sensitive = body.get("case-sensitive", True)
    if not isinstance(case_sensitive, bool):
        raise bad_request("case-sensitive must be a boolean")
    row_filter: Expression = AlwaysTrue()
    if body.get("filter") is not None:
        row_filter = expression_from_json(body["filter"])
    schema = md.schema()
    if body.get("use-snapshot-schema") and snapshot is not None and snapshot.schema_id is not None:
        schema = md.schema_by_id(snapshot.schema_id)
    select = body.get("select")
    if select is not None and (not isinstance(select, list) or not all(isinstance(s, str) for s in select)):
        raise bad_request("select must be a list of field names")
    io = state.catalog._file_io(md.properties, md.location)
    tasks = plan_files(io, md, snapshot, row_filter, schema, case_sensitive) if snapshot is not None else []
    # Every task carries a residual, ``true`` when nothing is filtered, as Iceberg Java's server
    # sends it: Java's client binds a missing one as a null expression, and evaluating that
    # residual against a partitioned file's values throws.
    residual = body["filter"] if body.get("filter") is not None else True
    deletes: dict[tuple[str, int | None], int] = {}
    delete_files: list[dict[str, Any]] = []
    scan_tasks: list[dict[str, Any]] = []
    for task in tasks:
        if task.data_file.column_files:
            from icefloe.errors import Unsupported

            raise Unsupported(
                f"{task.file_path} has v4 column files, which REST scan tasks cannot describe: "
                "plan this table on the client"
            )
        refs: list[int] = []
        for ref in task.deletes:
            key = (ref.delete_file.file_path, ref.delete_file.content_offset)
            if key not in deletes:
                deletes[key] = len(delete_files)
                delete_files.append(content_file_json(ref.delete_file, md, schema))
            refs.append(deletes[key])
        item: dict[str, Any] = {"data-file": content_file_json(task.data_file, md, schema)}
        if refs:
            item["delete-file-references"] = refs
        item["residual-filter"] = residual
        scan_tasks.append(item)
    result = {"status": "completed", "file-scan-tasks": scan_tasks, "delete-files": delete_files}
    plan_id = state.plans.keep((namespace, name), result)
    return Reply(payload={"plan-id": plan_id, **result})


def fetch_plan(state: ServerState, call: Call) -> Reply:
    """GET /namespaces/{namespace}/tables/{table}/plan/{plan-id}: a kept plan's result again."""
    table, plan_id = _plan_from_path(call)
    result = state.plans.fetch(table, plan_id)
    if result is None:
        raise _no_such_plan(table, plan_id)
    return Reply(payload=dict(result))


def cancel_plan(state: ServerState, call: Call) -> Reply:
    """DELETE /namespaces/{namespace}/tables/{table}/plan/{plan-id}: the plan is complete; its kept
    result is released."""
    table, plan_id = _plan_from_path(call)
    if not state.plans.release(table, plan_id):
        raise _no_such_plan(table, plan_id)
    return Reply(status=204)


def _plan_from_path(call: Call) -> tuple[TableKey, str]:
    namespace = namespace_from_path(call.path["namespace"])
    namespace, name = table_from_path(namespace, call.path["table"])
    call.principal.require(namespace, READ)
    return (namespace, name), call.path["plan_id"]


def _no_such_plan(table: TableKey, plan_id: str) -> HttpError:
    return not_found(
        f"no plan {plan_id!r} of table {'.'.join((*table[0], table[1]))!r} is kept: it was never issued, "
        "was cancelled, or was dropped to make room for newer plans",
        "NoSuchPlanIdException",
    )


def unknown_plan_task(state: ServerState, call: Call) -> Reply:
    """POST .../tasks: no plan tasks are ever issued."""
    raise not_found("no such plan task: planning here returns every task at once", "NoSuchPlanTaskException")
