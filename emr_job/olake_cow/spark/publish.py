"""The publish of a mirror write: one catalog commit that makes the write current and sets what every
publish sets (core/checkpoint.py: the checkpoint, the data it holds, the snapshot holding it).

A staged write is published only onto the snapshot it was staged on, as a compare-and-swap of the
table's metadata: never cherry-picked onto a newer one. Iceberg cherry-picks a staged append onto
any snapshot, so a first build staged while another run published its own would have put every row
in the mirror twice; a write staged before another run's publish would have repeated that run's
inserts. A mirror that moved raises MirrorMovedError and the step loop plans again from it."""
from typing import Any, Mapping, Optional

from ..core.checkpoint import published_properties
from ..core.errors import MirrorMovedError
from ..core.snapshots import Summary
from .catalog import IcebergCatalog, is_java_error


def publish(catalog: IcebergCatalog, namespace: str, table: str, staged_id: Optional[int], checkpoint: str,
            properties: Optional[Mapping[str, str]] = None, parent: Optional[int] = None) -> int:
    """Make staged snapshot `staged_id` current, or (None) a snapshot of no file with `checkpoint` in
    its summary (a change set that changed no mirror row is a data commit too: core/checkpoint.py
    find_checkpoint; --keep-mirror-changes), staged here on the current snapshot, which must be
    `parent` (the one the step was planned on; None: not checked), with the checkpoint properties
    and `properties`, in one commit; returns the mirror's new current id."""
    t = catalog.load(namespace, table)
    if staged_id is None:
        append = t.newFastAppend().set(Summary.WAP_ID, checkpoint).stageOnly()
        staged_id = int(append.apply().snapshotId())  # the id its commit keeps
        append.commit()
    _fast_forward(catalog, t, int(staged_id), checkpoint, properties or {}, parent)
    t.refresh()
    return int(t.currentSnapshot().snapshotId())


def _fast_forward(catalog: IcebergCatalog, t: Any, staged_id: int, checkpoint: str,
                  properties: Mapping[str, str], planned: Optional[int] = None) -> None:
    """Set main to `staged_id` with the checkpoint properties and `properties`, committed only if the
    table's metadata is still the one read here, whose current snapshot is the staged one's parent
    and (unless None) `planned` (no retry: a retry would apply it to a newer snapshot)."""
    ops = t.operations()
    base = ops.refresh()
    staged = base.snapshot(staged_id)
    current = base.currentSnapshot()
    held = None if current is None else int(current.snapshotId())
    parent = None if staged is None or staged.parentId() is None else int(staged.parentId())
    if staged is None or parent != held or (planned is not None and parent != planned):
        raise MirrorMovedError(f"the mirror's current snapshot is {held}, snapshot {staged_id} was staged on {parent}"
                               + ("" if planned is None else f" and the step was planned on {planned}")
                               + " (another run published, or someone committed): nothing was published")
    props = catalog.jvm.java.util.HashMap()
    values = {**published_properties(checkpoint, staged_id, dict(staged.summary()), int(base.formatVersion())),
              **properties}
    for key, value in values.items():
        props.put(key, value)
    builder = catalog.iceberg.TableMetadata.buildFrom(base)
    updated = builder.setBranchSnapshot(staged_id, "main").setProperties(props).build()
    try:
        ops.commit(base, updated)
    except Exception as exc:  # py4j's Java exception
        if is_java_error(exc, "CommitFailedException"):
            raise MirrorMovedError(f"the mirror changed while snapshot {staged_id} was being published "
                                   "(another run or someone's commit): nothing was published") from exc
        raise
