"""Write-audit-publish of one change set: the write is staged under the target's WAP id, the
staged snapshot is audited, and only then published, with the checkpoint, in one commit.
Spark/Iceberg adapter."""
import uuid
from typing import List, Optional, Tuple

from ..core.audit import ChangeCounts, Held, audit, replaced_rows
from ..core.checkpoint import REJECTED_PROPERTY, Marker, staged_for, with_rejected
from ..core.errors import AuditError, OlakeCowError
from ..core.identifiers import quote
from ..core.modes import MirrorFormat
from ..core.snapshots import Snapshot, Summary, TableState
from ..core.summary import TableResult
from .change_reader import ChangeSet
from .changes import ACTION, KEY, aligned_rows, merge_sql
from .iceberg import IcebergTables
from .scan_tasks import TaskSets


class MirrorWriter:
    def __init__(self, session, tables: IcebergTables, ns: str, name: str, mirror_q: str,
                 result: TableResult) -> None:
        self.session, self.tables = session, tables
        self.ns, self.name, self.mirror_q, self.result = ns, name, mirror_q, result

    def stage(self, cs: ChangeSet, marker: Marker, mirror: TableState,
              keys: Optional[Tuple[str, str]] = None) -> Optional[Snapshot]:
        """Write the change set as a staged snapshot on the mirror's current one; returns it, or
        None when the write changed nothing."""
        from pyspark.sql import functions as F

        self.session.conf.set("spark.wap.id", marker.wap_id)
        try:
            if cs.rebuild:
                rows = aligned_rows(cs.frame, self.session.table(self.mirror_q).schema)
                # Already range-partitioned and sorted by key: no second shuffle.
                writer = rows.writeTo(self.mirror_q).option("distribution-mode", "none")
                if mirror.current_id is None:
                    writer.append()
                else:
                    writer.overwrite(F.lit(True))
            else:
                view = f"olake_cow_changes_{uuid.uuid4().hex[:12]}"
                cs.frame.createOrReplaceTempView(view)
                try:
                    cols = self.session.table(self.mirror_q).columns
                    self.session.sql(merge_sql(self.mirror_q, quote(view), cols, cs.frame.columns, keys))
                finally:
                    self.session.catalog.dropTempView(view)
        finally:
            self.session.conf.unset("spark.wap.id")
        after = self.tables.state(self.ns, self.name)
        staged = [s for s in staged_for(after, marker) if s.parent_id == after.current_id]
        return staged[0] if staged else None

    def tally(self, frame, staged: Optional[Snapshot], fmt: MirrorFormat) -> Tuple[ChangeCounts, Optional[Held]]:
        """One pass over the (cached) change set: what it asks for, and, after a copy-on-write merge,
        which of its keys the rewritten files held (their key column, read through the parent
        snapshot's scan tasks: only files the merge read itself, never the whole mirror)."""
        from pyspark.sql import functions as F

        upsert = F.col(ACTION) == F.lit("U")
        removed: List[str] = []
        parent = staged.parent_id if staged is not None else None
        if staged is not None and parent is not None and fmt == MirrorFormat.COW:
            removed = [p for p, _ in self.tables.removed_data_files(self.ns, self.name, staged.snapshot_id)]
        if not removed or parent is None:
            row = frame.agg(F.sum(upsert.cast("long")).alias("u"),
                            F.sum((~upsert).cast("long")).alias("d")).collect()[0]
            counts = ChangeCounts(int(row["u"] or 0), int(row["d"] or 0))
            return counts, (Held(0, 0) if staged is not None and fmt == MirrorFormat.COW else None)
        sets = TaskSets(self.session, self.tables.load(self.ns, self.name), self.mirror_q)
        try:
            old = sets.read(sets.plan(parent).pick(removed)).select(KEY).distinct() \
                .withColumn("__olake_cow_held", F.lit(True))
            held = F.col("__olake_cow_held").isNotNull()
            row = frame.select(KEY, ACTION).join(old, on=KEY, how="left").agg(
                F.sum(upsert.cast("long")).alias("u"), F.sum((~upsert).cast("long")).alias("d"),
                F.sum((upsert & held).cast("long")).alias("hu"), F.sum((~upsert & held).cast("long")).alias("hd"),
            ).collect()[0]
        finally:
            sets.close()
        return (ChangeCounts(int(row["u"] or 0), int(row["d"] or 0)), Held(int(row["hu"] or 0), int(row["hd"] or 0)))

    def publish(self, staged: Snapshot, marker: Marker, counts: ChangeCounts, parent_rows: int,
                rebuild: bool, fmt: MirrorFormat, held: Optional[Held] = None) -> None:
        """Audit the staged snapshot, then publish it with the checkpoint (one commit). A snapshot that
        fails is recorded as rejected on the mirror, so no later run tries to publish it again."""
        try:
            audit(staged, parent_rows, counts, rebuild, self.result.mirror, fmt, held)
        except AuditError:
            mirror = self.tables.state(self.ns, self.name)
            self.tables.set_property(self.ns, self.name, REJECTED_PROPERTY, with_rejected(mirror, staged.snapshot_id))
            raise
        self.tables.publish(self.ns, self.name, staged.snapshot_id, marker.wap_id)
        r, rewritten = self.result, staged.summary_int(Summary.DELETED_DATA_FILES)
        if rebuild:
            r.rows_upserted += staged.summary_int(Summary.ADDED_RECORDS)
        else:
            r.rows_upserted += counts.upserts
            r.rows_deleted += counts.deletes
            r.rows_replaced += replaced_rows(staged, counts, fmt)
        r.files_written += staged.summary_int(Summary.ADDED_DATA_FILES)
        r.bytes_written += staged.summary_int(Summary.ADDED_FILES_SIZE)
        r.files_rewritten += rewritten
        r.files_read += rewritten
        r.bytes_read += staged.summary_int(Summary.REMOVED_FILES_SIZE)

    def nothing_staged(self, counts: ChangeCounts, marker: Marker, rebuild: bool) -> None:
        """A write that staged nothing may only be one that had nothing to upsert (deletes of keys
        the mirror does not hold change nothing)."""
        if counts.upserts or rebuild:
            raise OlakeCowError(f"{self.result.mirror}: the merge for source snapshot {marker.snapshot_id} "
                                "staged no snapshot")
        self.tables.set_checkpoint(self.ns, self.name, marker.wap_id)
        self.result.rows_deleted += counts.deletes
