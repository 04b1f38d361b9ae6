"""Columns the source renamed (pure, over Iceberg schema JSON).

Iceberg keeps a renamed column's field id, and its data files keep their values. A field of the
source's current schema whose id had another name in an older source schema is the same column;
when the mirror still holds it under that older name, the mirror renames it too (metadata only),
so its older rows keep their values under the new name instead of a new, empty column.
"""
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

Schema = Mapping[str, Any]


def field_names(schema: Schema) -> Dict[int, str]:
    """Field id -> full name (Iceberg's: `a.b`, `l.element.b`, `m.value.b`) of every field."""
    out: Dict[int, str] = {}

    def walk(typ: Any, prefix: str) -> None:
        if not isinstance(typ, Mapping):
            return
        kind = typ.get("type")
        if kind == "struct":
            for f in typ.get("fields") or ():
                name = f"{prefix}{f['name']}"
                out[int(f["id"])] = name
                walk(f.get("type"), name + ".")
        elif kind == "list":
            name = f"{prefix}element"
            out[int(typ["element-id"])] = name
            walk(typ.get("element"), name + ".")
        elif kind == "map":
            for part in ("key", "value"):
                name = f"{prefix}{part}"
                out[int(typ[f"{part}-id"])] = name
                walk(typ.get(part), name + ".")

    walk({"type": "struct", "fields": schema.get("fields") or ()}, "")
    return out


def _leaf(name: str) -> str:
    return name.rsplit(".", 1)[-1]


def renames(source_schemas: Sequence[Schema], current_schema_id: Optional[int],
            mirror_schema: Schema) -> List[Tuple[str, str]]:
    """(mirror column's full name, its new leaf name) for each source field renamed since the
    mirror took it: the mirror holds exactly one older name of the field and not its current one."""
    current = next((s for s in source_schemas if s.get("schema-id") == current_schema_id), None)
    if current is None:
        return []
    older = [field_names(s) for s in source_schemas if s is not current]
    held = set(field_names(mirror_schema).values())
    out = []
    for fid, now in sorted(field_names(current).items()):
        if now in held:
            continue
        before = {names[fid] for names in older if fid in names} & held
        if len(before) == 1:
            old = before.pop()
            if _leaf(old) != _leaf(now):  # else only a parent was renamed: renaming the parent is enough
                out.append((old, _leaf(now)))
    return out
