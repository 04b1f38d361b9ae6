"""Write-audit-publish of one change set: the write is staged under the target's WAP id, the
staged snapshot is audited, and only then published, with the checkpoint, in one commit.
Spark/Iceberg adapter."""
import uuid
from typing import Optional, Tuple

from .audit import audit
from .change_reader import ChangeSet
from .changes import ChangeStats, aligned_rows, merge_sql
from .checkpoint import REJECTED_PROPERTY, Marker, staged_for, with_rejected
from .errors import AuditError, OlakeCowError
from .iceberg import IcebergTables
from .identifiers import quote
from .modes import MirrorFormat
from .snapshots import Snapshot, Summary, TableState
from .summary import TableResult


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

    def publish(self, staged: Snapshot, marker: Marker, stats: ChangeStats, parent_rows: int,
                rebuild: bool, fmt: MirrorFormat) -> None:
        """Audit the staged snapshot, then publish it with the checkpoint (one commit). A snapshot that
        fails is recorded as rejected on the mirror, so no later run tries to publish it again."""
        try:
            audit(staged, stats.expected_records(parent_rows, rebuild), self.result.mirror, fmt)
        except AuditError:
            mirror = self.tables.state(self.ns, self.name)
            self.tables.set_property(self.ns, self.name, REJECTED_PROPERTY, with_rejected(mirror, staged.snapshot_id))
            raise
        self.tables.publish(self.ns, self.name, staged.snapshot_id, marker.wap_id)
        r, rewritten = self.result, staged.summary_int(Summary.DELETED_DATA_FILES)
        r.files_written += staged.summary_int(Summary.ADDED_DATA_FILES)
        r.bytes_written += staged.summary_int(Summary.ADDED_FILES_SIZE)
        r.files_rewritten += rewritten
        r.files_read += rewritten
        r.bytes_read += staged.summary_int(Summary.REMOVED_FILES_SIZE)

    def nothing_staged(self, stats: ChangeStats, marker: Marker, rebuild: bool) -> None:
        """A write that staged nothing may only be one that had nothing to change."""
        if stats.inserted or stats.updated or stats.deleted or rebuild:
            raise OlakeCowError(f"{self.result.mirror}: the merge for source snapshot {marker.snapshot_id} "
                                "staged no snapshot")
        self.tables.set_checkpoint(self.ns, self.name, marker.wap_id)
