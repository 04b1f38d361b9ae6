"""Source→mirror schema alignment rules (pure; types as Spark simple strings)."""
import re
from typing import List, Sequence, Tuple

from .errors import SchemaEvolutionError

_DECIMAL = re.compile(r"^decimal\((\d+),(\d+)\)$")
_WIDENINGS = {("int", "bigint"), ("float", "double"), ("tinyint", "int"), ("smallint", "int"),
              ("tinyint", "bigint"), ("smallint", "bigint")}


def can_widen(old: str, new: str) -> bool:
    if (old, new) in _WIDENINGS:
        return True
    a, b = _DECIMAL.match(old), _DECIMAL.match(new)
    return bool(a and b and a.group(2) == b.group(2) and int(b.group(1)) > int(a.group(1)))


def schema_changes(source: Sequence[Tuple[str, str]], mirror: Sequence[Tuple[str, str]],
                   table: str = "") -> List[Tuple[str, str, str]]:
    """ALTER steps that make the mirror hold every source column: ('add'|'widen', name, type).
    Columns only the mirror has are kept (OLake never drops columns)."""
    have = {name.lower(): (name, typ) for name, typ in mirror}
    steps = []
    for name, typ in source:
        existing = have.get(name.lower())
        if existing is None:
            steps.append(("add", name, typ))
        elif existing[1] != typ:
            if can_widen(existing[1], typ):
                steps.append(("widen", existing[0], typ))
            elif not can_widen(typ, existing[1]):  # the mirror already holds a wider type
                raise SchemaEvolutionError(
                    f"{table}: column {name!r} changed from {existing[1]} to {typ}, which is not a "
                    "type promotion Iceberg allows")
    return steps
