"""core/resolution.py's rule in Arrow: one sort of the candidates, the first row per key wins."""
from dataclasses import dataclass
from typing import Any, List, Sequence, Tuple

from ..core.audit import ChangeCounts
from ..core.modes import DeleteMode
from ..core.resolution import KEY, OP_TYPE, ORDER_COLUMNS, TOMBSTONE

ArrowTable = Any


@dataclass
class ArrowChangeSet:
    """A resolved change set: the rows to upsert (the source's schema) and the keys to delete."""

    upserts: ArrowTable
    deletes: List[str]
    files_read: int = 0
    bytes_read: int = 0

    @property
    def counts(self) -> ChangeCounts:
        return ChangeCounts(self.upserts.num_rows, len(self.deletes))

    @property
    def keys(self) -> List[str]:
        return self.upserts.column(KEY).to_pylist() + self.deletes

    def count_read(self, files: int, size: int) -> None:
        self.files_read += files
        self.bytes_read += size


def compose(parts: Sequence[Tuple[ArrowTable, Sequence[str]]], empty: ArrowTable,
            delete_mode: DeleteMode) -> Tuple[ArrowTable, List[str]]:
    """(rows to upsert, keys to delete) of parts (visible rows, deleted keys), oldest first."""
    import pyarrow as pa

    tables = [rows for rows, _ in parts if rows is not None and rows.num_rows]
    rows = pa.concat_tables(tables) if tables else empty
    if not any(keys for _, keys in parts) and _unique_keys(rows):
        upserts, deletes = rows, []  # one row per key and nothing deleted (a first build): nothing to resolve
    else:
        winners = _winners(_candidates(rows, parts))
        is_delete = winners.column("is_delete").to_pylist()
        upsert_rows = [r for r, d in zip(winners.column("row").to_pylist(), is_delete) if not d]
        deletes = [k for k, d in zip(winners.column("k").to_pylist(), is_delete) if d]
        upserts = rows.take(pa.array(upsert_rows, pa.int64()))
    if delete_mode == DeleteMode.HARD:
        upserts, tombstoned = _without_tombstones(upserts)
        deletes += tombstoned
    return upserts, deletes


def _unique_keys(rows: ArrowTable) -> bool:
    import pyarrow.compute as pc

    return not rows.num_rows or pc.count_distinct(rows.column(KEY)).as_py() == rows.num_rows


def _candidates(rows: ArrowTable, parts: Sequence[Tuple[ArrowTable, Sequence[str]]]) -> ArrowTable:
    """One line per visible row and per deleted key: key, part, is_delete, row index, order columns."""
    import pyarrow as pa

    row_part = [i for i, (r, _) in enumerate(parts) if r is not None for _ in range(r.num_rows)]
    deleted = [(k, i) for i, (_, keys) in enumerate(parts) for k in keys]
    n = rows.num_rows
    cand = {
        "k": pa.concat_arrays([rows.column(KEY).combine_chunks().cast(pa.string()),
                               pa.array([k for k, _ in deleted], pa.string())]),
        "part": pa.array(row_part + [i for _, i in deleted], pa.int64()),
        "is_delete": pa.array([0] * n + [1] * len(deleted), pa.int8()),
        "row": pa.array(list(range(n)) + [-1] * len(deleted), pa.int64()),
    }
    for c in ORDER_COLUMNS:
        if c in rows.column_names:
            col = rows.column(c).combine_chunks()
            cand[c] = pa.concat_arrays([col, pa.nulls(len(deleted), col.type)])
    return pa.table(cand)


def _winners(cand: ArrowTable) -> ArrowTable:
    """The first line per key in the rule's order (core/resolution.py)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    sort = [("k", "ascending", "at_end"), ("part", "descending", "at_end"), ("is_delete", "ascending", "at_end")] + \
        [(c, "descending", "at_end") for c in ORDER_COLUMNS if c in cand.column_names]  # newest first, nulls last
    ordered = cand.take(pc.sort_indices(cand, sort_keys=sort))
    keys = ordered.column("k").to_pylist()
    firsts = [i for i in range(len(keys)) if i == 0 or keys[i] != keys[i - 1]]
    return ordered.take(pa.array(firsts, pa.int64()))


def _without_tombstones(upserts: ArrowTable) -> Tuple[ArrowTable, List[str]]:
    """--delete-mode hard: tombstone rows (`_op_type = 'd'`) become deletions of their keys."""
    import pyarrow.compute as pc

    if OP_TYPE not in upserts.column_names or not upserts.num_rows:
        return upserts, []
    tomb = pc.fill_null(pc.equal(upserts.column(OP_TYPE), TOMBSTONE), False)
    return upserts.filter(pc.invert(tomb)), upserts.filter(tomb).column(KEY).to_pylist()
