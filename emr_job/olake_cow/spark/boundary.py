"""Truncate mode's one write to OLake's table: closing the open change set (core/truncate.py
plans when)."""
from typing import Optional

from ..core.checkpoint import TRUNCATED_INTO_PROPERTY
from ..core.snapshots import BOUNDARY_KEY, FIRST_BOUNDARY_KEY
from .catalog import IcebergCatalog


def close_change_set(catalog: IcebergCatalog, namespace: str, table: str, run_id: str, mirror: str,
                     first_after: Optional[int] = None) -> int:
    """Delete every file of the source's current snapshot in one commit marked as a boundary, which
    also names the mirror the rows go to on OLake's table (`mirror`: `<namespace>.<table>`); the new
    boundary's id. On a concurrent commit Iceberg retries the transaction on the new base, so the
    boundary's parent always holds exactly what was removed. `first_after`: the snapshot the table's
    first truncate was planned on, recorded on it (core/truncate.py)."""
    t = catalog.load(namespace, table)
    always = catalog.iceberg.expressions.Expressions.alwaysTrue()
    txn = t.newTransaction()
    txn.updateProperties().set(TRUNCATED_INTO_PROPERTY, mirror).commit()
    delete = txn.newDelete().deleteFromRowFilter(always).set(BOUNDARY_KEY, run_id)
    if first_after is not None:
        delete.set(FIRST_BOUNDARY_KEY, str(first_after))
    delete.commit()
    txn.commitTransaction()
    t.refresh()
    return int(t.currentSnapshot().snapshotId())
