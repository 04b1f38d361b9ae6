"""The resolved state of an OLake table, computed in plain Python from the batches written.

Independent of Spark and of the compactor: the expected mirror is derived from what the writer
was asked to write, applying OLake's semantics (equality deletes remove older rows; within a
commit the row with the latest _cdc_timestamp wins; a tombstone is a row with _op_type='d')."""
import datetime as dt
from typing import Any, Dict, Iterable, List, Mapping, Optional

Row = Dict[str, Any]


class TableModel:
    def __init__(self) -> None:
        self.rows: Dict[str, Row] = {}

    def apply(self, rows: Iterable[Mapping[str, Any]], pure_deletes: Iterable[str] = ()) -> None:
        for key in pure_deletes:  # deletes of a commit apply to older commits only
            self.rows.pop(key, None)
        ordered = sorted(rows, key=lambda r: (r["_cdc_timestamp"], r["_olake_timestamp"]))
        for r in ordered:
            self.rows[r["_olake_id"]] = dict(r)

    def reset(self) -> None:
        self.rows.clear()

    def expected(self, delete_mode: str = "keep") -> List[Row]:
        rows = [r for r in self.rows.values()
                if delete_mode == "keep" or r.get("_op_type") != "d"]
        return sorted(rows, key=lambda r: r["_olake_id"])


def normalize(value: Any) -> Any:
    """A comparable form of a value as Spark, pyiceberg or the model give it: structs (Spark rows,
    dicts) become sorted (field, value) pairs without null fields, maps (dicts, or pyarrow's lists of
    pairs) sorted pairs, lists tuples."""
    if isinstance(value, dt.datetime):
        return round(value.timestamp(), 6)
    if isinstance(value, float):
        return round(value, 9)
    if isinstance(value, (bytearray, memoryview)):  # Spark's binary values: hashable, as the others' bytes
        return bytes(value)
    if hasattr(value, "asDict"):
        value = value.asDict(recursive=True)
    if isinstance(value, dict):
        return tuple(sorted((str(k), normalize(v)) for k, v in value.items() if v is not None))
    if isinstance(value, list):
        if value and all(isinstance(x, tuple) and len(x) == 2 for x in value):
            return tuple(sorted((str(k), normalize(v)) for k, v in value if v is not None))
        return tuple(normalize(x) for x in value)
    return value


def normalized(rows: Iterable[Mapping[str, Any]], columns: Optional[Iterable[str]] = None) -> List[tuple]:
    """Rows as sorted tuples of (column, value) over `columns` (missing columns are None)."""
    out = []
    for r in rows:
        cols = sorted(columns) if columns is not None else sorted(r)
        out.append(tuple((c, normalize(r.get(c))) for c in cols))
    return sorted(out, key=lambda t: str(dict(t).get("_olake_id")))


def diff(actual: List[tuple], expected: List[tuple], limit: int = 5) -> str:
    a, e = set(actual), set(expected)
    missing = sorted(e - a, key=str)[:limit]
    extra = sorted(a - e, key=str)[:limit]
    return (f"{len(actual)} rows vs {len(expected)} expected; missing {len(e - a)}, "
            f"unexpected {len(a - e)}\n  missing: {missing}\n  unexpected: {extra}")
