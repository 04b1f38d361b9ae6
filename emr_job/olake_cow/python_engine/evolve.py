"""The mirror follows its source's columns on pyiceberg, as the Spark engine's MirrorDDL makes it:
the source's renames (core/renames.py), then its new columns and type promotions by name (columns
only the mirror has are kept). Staged in the merge's own transaction, so the new schema and the
rows written under it are one catalog commit. A change of partition spec or sort order is the Spark
engine's (spec_or_order_change), as is a schema pyiceberg cannot apply (HandOver)."""
import json
from typing import Any, List, Optional, Tuple

from ..core.renames import field_names, renames
from .create import wanted_order
from .reader import HandOver

OrderTerm = Tuple[str, str, str, str]


def _json(schema: Any) -> Any:
    return json.loads(schema.model_dump_json(by_alias=True))


def follow_source(tx: Any, src: Any) -> List[str]:
    """Stage in `tx` (a transaction on the mirror) what the mirror must change to hold the rows of
    pyiceberg table `src`; returns what changed ([] when nothing)."""
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
    return changed


def _spec(table: Any) -> List[Tuple[str, str]]:
    schema = table.schema()
    return sorted((str(f.transform), schema.find_column_name(f.source_id) or "") for f in table.spec().fields
                  if str(f.transform) != "void")


def _order(order: Any, schema: Any) -> List[OrderTerm]:
    return [(str(f.transform), schema.find_column_name(f.source_id) or "", str(f.direction.name),
             str(f.null_order.name)) for f in order.fields]


def spec_or_order_change(src: Any, mirror: Any) -> Optional[str]:
    """Why the mirror's partition spec or sort order no longer follows its source's (None: it
    does): the Spark engine evolves them."""
    if _spec(src) != _spec(mirror):
        return "the source's partition spec changed: the Spark engine evolves the mirror's"
    if _order(wanted_order(src), src.schema()) != _order(mirror.sort_order(), mirror.schema()):
        return "the source's sort order changed: the Spark engine evolves the mirror's"
    return None


def lossy_column(schema: Any) -> Optional[str]:
    """The first column pyiceberg 0.12 cannot carry unchanged (None: none): its Arrow projection, on
    every read and write, rebuilds a list of structs or a map with struct values from its offsets
    alone, so a null list or map becomes an empty one."""
    from pyiceberg.types import ListType, MapType, StructType

    def walk(typ: Any, name: str) -> Optional[str]:
        if isinstance(typ, StructType):
            for f in typ.fields:
                found = walk(f.field_type, f"{name}.{f.name}" if name else f.name)
                if found:
                    return found
        elif isinstance(typ, ListType):
            return name if isinstance(typ.element_type, StructType) else walk(typ.element_type, name)
        elif isinstance(typ, MapType):
            if isinstance(typ.value_type, StructType) or isinstance(typ.key_type, StructType):
                return name
            return walk(typ.value_type, name)
        return None

    return walk(schema.as_struct(), "")


def lossy_refusal(src: Any, mirror: Any) -> Optional[str]:
    """Why the tables' columns are the Spark engine's (lossy_column), or None."""
    for table in (src, mirror):
        lossy = lossy_column(table.schema()) if table is not None else None
        if lossy:
            return (f"pyiceberg 0.12 turns a null list or map of structs into an empty one (column {lossy}): the "
                    "Spark engine runs tables with such columns")
    return None

