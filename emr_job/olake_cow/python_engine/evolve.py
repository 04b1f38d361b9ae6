"""The mirror follows its source on pyiceberg, as the Spark engine's MirrorDDL makes it: the
source's renames (core/renames.py), then its new columns and type promotions by name (columns only
the mirror has are kept), then its partition spec and sort order (by column name: the two tables'
field ids may differ). Staged in the merge's own transaction, so the new schema, spec and order and
the rows written under them are one catalog commit (Spark commits them before its merge). What
pyiceberg cannot apply is the Spark engine's (HandOver)."""
import json
from typing import Any, List, Tuple

from ..core.renames import field_names, renames
from .create import wanted_order
from .reader import HandOver

OrderTerm = Tuple[str, str, str, str]


def _json(schema: Any) -> Any:
    return json.loads(schema.model_dump_json(by_alias=True))


def follow_source(tx: Any, src: Any) -> List[str]:
    """Stage in `tx` (a transaction on the mirror) what the mirror must change to hold the rows of
    pyiceberg table `src` as its source does (columns, spec, order); returns what changed ([] when
    nothing)."""
    changed = []
    held = _json(tx.table_metadata.schema())
    current = _json(src.schema())
    if not set(field_names(current).values()) <= set(field_names(held).values()):
        found = renames([_json(s) for s in src.schemas().values()], src.schema().schema_id, held)
        if found:
            with tx.update_schema() as update:
                for old, new in found:
                    update.rename_column(old, new)
            changed.append("renamed columns")
    before = tx.table_metadata.current_schema_id
    try:
        with tx.update_schema() as update:
            update.union_by_name(src.schema())
    except Exception as exc:  # noqa: BLE001 - pyiceberg's ValidationError and ValueError
        raise HandOver(f"pyiceberg cannot apply the source's schema to the mirror ({exc}): "
                       "the Spark engine evolves the mirror") from None
    if tx.table_metadata.current_schema_id != before:
        changed.append("schema")
    return changed + follow_layout(tx, src)


def follow_layout(tx: Any, src: Any) -> List[str]:
    """Stage in `tx` (a transaction on the mirror, its schema already following `src`) the partition
    spec and sort order of pyiceberg table `src` where the mirror's differ; returns what changed."""
    try:
        return [what for what, changed in (("partition spec", _follow_spec(tx, src)),
                                           ("sort order", _follow_order(tx, src))) if changed]
    except Exception as exc:  # noqa: BLE001 - pyiceberg's ValueError and ValidationError
        raise HandOver(f"pyiceberg cannot give the mirror its source's partition spec or sort order ({exc}): "
                       "the Spark engine evolves the mirror") from None


def _follow_spec(tx: Any, src: Any) -> bool:
    schema = tx.table_metadata.schema()
    want, have = _spec(src.spec(), src.schema()), _spec(tx.table_metadata.spec(), schema)
    if want == have:
        return False
    with tx.update_spec() as update:
        for f in tx.table_metadata.spec().fields:
            if str(f.transform) != "void" and _term(f, schema) not in want:
                update.remove_field(f.name)
        for f in src.spec().fields:
            if str(f.transform) != "void" and _term(f, src.schema()) not in have:
                update.add_field(_term(f, src.schema())[1], f.transform)
    return True


def _follow_order(tx: Any, src: Any) -> bool:
    wanted = wanted_order(src)
    if _order(wanted, src.schema()) == _order(tx.table_metadata.sort_order(), tx.table_metadata.schema()):
        return False
    with tx.update_sort_order() as order:
        for f in wanted.fields:
            add = order.asc if f.direction.name == "ASC" else order.desc
            add(src.schema().find_column_name(f.source_id), f.transform, f.null_order)
    return True


def _term(field: Any, schema: Any) -> Tuple[str, str]:
    return str(field.transform), schema.find_column_name(field.source_id) or ""


def _spec(spec: Any, schema: Any) -> List[Tuple[str, str]]:
    return sorted(_term(f, schema) for f in spec.fields if str(f.transform) != "void")


def _order(order: Any, schema: Any) -> List[OrderTerm]:
    return [(str(f.transform), schema.find_column_name(f.source_id) or "", str(f.direction.name),
             str(f.null_order.name)) for f in order.fields]
