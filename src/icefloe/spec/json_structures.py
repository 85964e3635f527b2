"""JSON of types, schemas, partition specs and sort orders (spec Appendix C), as table metadata holds them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from icefloe.errors import CorruptMetadata, ValidationError
from icefloe.spec.conversions import from_json_value, to_json_value
from icefloe.spec.json_fields import as_int, as_list, optional_int, required, required_int
from icefloe.spec.partitioning import PARTITION_FIELD_ID_START, PartitionField, PartitionSpec
from icefloe.spec.schema import Schema
from icefloe.spec.sort_order import NullOrder, SortDirection, SortField, SortOrder
from icefloe.spec.transforms import parse_transform
from icefloe.spec.types import (
    IcebergType,
    ListType,
    MapType,
    NestedField,
    StructType,
    primitive_from_string,
)


def type_to_json(type_: IcebergType) -> Any:
    """JSON form of a type: a string for primitives, an object for struct/list/map."""
    if isinstance(type_, StructType):
        return {"type": "struct", "fields": [_field_to_dict(f) for f in type_.fields]}
    if isinstance(type_, ListType):
        return {
            "type": "list",
            "element-id": type_.element_id,
            "element": type_to_json(type_.element_type),
            "element-required": type_.element_required,
        }
    if isinstance(type_, MapType):
        return {
            "type": "map",
            "key-id": type_.key_id,
            "key": type_to_json(type_.key_type),
            "value-id": type_.value_id,
            "value": type_to_json(type_.value_type),
            "value-required": type_.value_required,
        }
    return str(type_)


def _field_to_dict(f: NestedField) -> dict[str, Any]:
    out: dict[str, Any] = {"id": f.field_id, "name": f.name, "required": f.required}
    out["type"] = type_to_json(f.field_type)
    if f.doc is not None:
        out["doc"] = f.doc
    if f.initial_default is not None:
        out["initial-default"] = to_json_value(f.field_type, f.initial_default)
    if f.write_default is not None:
        out["write-default"] = to_json_value(f.field_type, f.write_default)
    return out


def type_from_json(data: Any) -> IcebergType:
    """Parse a type's JSON form."""
    if isinstance(data, str):
        try:
            return primitive_from_string(data)
        except ValidationError as exc:
            raise CorruptMetadata(str(exc)) from exc
    kind = required(data, "type", "nested type")
    if kind == "struct":
        return StructType(
            *(_field_from_dict(f) for f in as_list(required(data, "fields", "struct"), "fields", "struct"))
        )
    if kind == "list":
        return ListType(
            required_int(data, "element-id", "list type"),
            type_from_json(required(data, "element", "list type")),
            bool(data.get("element-required", False)),
        )
    if kind == "map":
        return MapType(
            required_int(data, "key-id", "map type"),
            type_from_json(required(data, "key", "map type")),
            required_int(data, "value-id", "map type"),
            type_from_json(required(data, "value", "map type")),
            bool(data.get("value-required", False)),
        )
    raise CorruptMetadata(f"unknown nested type {kind!r}")


def _field_from_dict(data: Any) -> NestedField:
    what = "schema field"
    field_id = required_int(data, "id", what)
    name = required(data, "name", what)
    field_type = type_from_json(required(data, "type", what))
    try:
        initial = from_json_value(field_type, data.get("initial-default"))
        write = from_json_value(field_type, data.get("write-default"))
    except ValidationError as exc:
        raise CorruptMetadata(f"bad default value for field {field_id} ({name!r}): {exc}") from exc
    return NestedField(
        field_id=field_id,
        name=str(name),
        field_type=field_type,
        required=bool(data.get("required", False)),
        doc=data.get("doc"),
        initial_default=initial,
        write_default=write,
    )


def schema_to_dict(schema: Schema) -> dict[str, Any]:
    """JSON object of a schema (``type``, ``schema-id``, ``identifier-field-ids``, ``fields``)."""
    out: dict[str, Any] = {"type": "struct", "schema-id": schema.schema_id}
    if schema.identifier_field_ids:
        out["identifier-field-ids"] = list(schema.identifier_field_ids)
    out["fields"] = [_field_to_dict(f) for f in schema.fields]
    return out


def schema_from_dict(data: Any) -> Schema:
    """Parse a schema JSON object."""
    what = "schema"
    fields = [_field_from_dict(f) for f in as_list(required(data, "fields", what), "fields", what)]
    ids = data.get("identifier-field-ids") or []
    return Schema(
        *fields,
        schema_id=optional_int(data, "schema-id", what) or 0,
        identifier_field_ids=[as_int(i, "identifier-field-ids", what) for i in as_list(ids, "ids", what)],
    )


# ---------------------------------------------------------------------------------------------
# partition specs and sort orders


def partition_field_to_dict(f: PartitionField) -> dict[str, Any]:
    out: dict[str, Any] = {"name": f.name, "transform": str(f.transform)}
    if f.source_ids is not None and len(f.source_ids) > 1:
        out["source-ids"] = list(f.source_ids)
    else:
        out["source-id"] = f.source_id
    out["field-id"] = f.field_id
    return out


def spec_to_dict(spec: PartitionSpec) -> dict[str, Any]:
    """JSON object of a partition spec (``spec-id``, ``fields``)."""
    return {"spec-id": spec.spec_id, "fields": [partition_field_to_dict(f) for f in spec.fields]}


def _source_ids(data: Mapping[str, Any], what: str) -> tuple[int, tuple[int, ...] | None]:
    if data.get("source-ids") is not None:
        ids = tuple(as_int(i, "source-ids", what) for i in as_list(data["source-ids"], "source-ids", what))
        if not ids:
            raise CorruptMetadata(f"{what} has an empty 'source-ids' list")
        if len(ids) == 1:
            return ids[0], None
        return ids[0], ids
    return required_int(data, "source-id", what), None


def partition_fields_from_list(
    data: Any, next_field_id: int = PARTITION_FIELD_ID_START
) -> list[PartitionField]:
    """Parse a list of partition field objects; missing ``field-id`` (v1) is assigned from 1000 on."""
    what = "partition field"
    out = []
    for i, f in enumerate(as_list(data, "fields", "partition spec")):
        source_id, source_ids = _source_ids(f, what)
        field_id = optional_int(f, "field-id", what)
        out.append(
            PartitionField(
                source_id=source_id,
                field_id=next_field_id + i if field_id is None else field_id,
                transform=parse_transform(str(required(f, "transform", what))),
                name=str(required(f, "name", what)),
                source_ids=source_ids,
            )
        )
    return out


def spec_from_dict(data: Any) -> PartitionSpec:
    """Parse a partition spec object, or a legacy v1 list of partition fields (spec id 0)."""
    if isinstance(data, list):
        return PartitionSpec(*partition_fields_from_list(data), spec_id=0)
    fields = partition_fields_from_list(required(data, "fields", "partition spec"))
    return PartitionSpec(*fields, spec_id=optional_int(data, "spec-id", "partition spec") or 0)


def sort_order_to_dict(order: SortOrder) -> dict[str, Any]:
    """JSON object of a sort order (``order-id``, ``fields``)."""
    fields = []
    for f in order.fields:
        out: dict[str, Any] = {"transform": str(f.transform)}
        if f.source_ids is not None and len(f.source_ids) > 1:
            out["source-ids"] = list(f.source_ids)
        else:
            out["source-id"] = f.source_id
        out["direction"] = f.direction.value
        out["null-order"] = f.null_order.value
        fields.append(out)
    return {"order-id": order.order_id, "fields": fields}


def sort_order_from_dict(data: Any) -> SortOrder:
    """Parse a sort order object."""
    what = "sort field"
    fields = []
    for f in as_list(required(data, "fields", "sort order"), "fields", "sort order"):
        source_id, source_ids = _source_ids(f, what)
        try:
            direction = SortDirection(str(required(f, "direction", what)).lower())
            null_order = NullOrder(str(required(f, "null-order", what)).lower())
        except ValueError as exc:
            raise CorruptMetadata(f"bad sort field {f!r}: {exc}") from exc
        fields.append(
            SortField(
                source_id=source_id,
                transform=parse_transform(str(required(f, "transform", what))),
                direction=direction,
                null_order=null_order,
                source_ids=source_ids,
            )
        )
    return SortOrder(*fields, order_id=required_int(data, "order-id", "sort order"))
