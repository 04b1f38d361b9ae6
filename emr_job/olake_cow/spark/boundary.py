"""Truncate mode's one write to OLake's table: closing the open change set (core/truncate.py
plans when)."""
from ..core.snapshots import BOUNDARY_KEY
from .catalog import IcebergCatalog


def close_change_set(catalog: IcebergCatalog, namespace: str, table: str, run_id: str) -> int:
    """Delete every file of the source's current snapshot in one commit marked as a boundary; the
    new boundary's id. On a concurrent commit Iceberg retries on the new base, so the boundary's
    parent always holds exactly what was removed."""
    t = catalog.load(namespace, table)
    always = catalog.iceberg.expressions.Expressions.alwaysTrue()
    t.newDelete().deleteFromRowFilter(always).set(BOUNDARY_KEY, run_id).commit()
    t.refresh()
    return int(t.currentSnapshot().snapshotId())
