"""Write-audit-publish of one change set: the write is staged under the target's WAP id, the
staged snapshot is audited, and only then published, with the checkpoint, in one commit.
Spark/Iceberg adapter."""
import uuid
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Tuple

from ..core.audit import ChangeCounts, audit, replaced_rows
from ..core.checkpoint import REJECTED_PROPERTY, Marker, staged_for, with_rejected
from ..core.errors import AuditError, OlakeCowError
from ..core.filesize import mirror_target_bytes
from ..core.identifiers import quote
from ..core.identity import DELETE_MODE_PROPERTY
from ..core.modes import MirrorFormat
from ..core.pruning import (
    FileBounds,
    KeyMerge,
    MergeShape,
    Rebuild,
    WholeRewrite,
    choose_write,
    cow_write,
    merge_shape,
    unknown_shape,
)
from ..core.snapshots import Snapshot, Summary, TableState
from ..core.summary import TableResult
from .catalog import IcebergCatalog
from .change_set import ChangeSet, DataFrame
from .changes import ACTION, KEY, aligned_rows, key_condition, merge_sql
from .file_listing import FileListing
from .mirror_ddl import spec_terms
from .scan_tasks import TaskSets

KEYS_COLLECTED = 200_000  # change sets up to this many keys get exact file pruning; larger ones their key range
DISTRIBUTION_MODE = "spark.sql.iceberg.distribution-mode"
GROUP_FILTER = "spark.sql.optimizer.runtime.rowLevelOperationGroupFilter.enabled"
PARALLELISM_FIRST = "spark.sql.adaptive.coalescePartitions.parallelismFirst"
PREFER_SORT_MERGE = "spark.sql.join.preferSortMergeJoin"
FILES_LISTED_DIRECTLY = 200  # mirrors of up to this many files: their bounds through Iceberg's API, no Spark job


@dataclass(frozen=True)
class ChangeSummary:
    """What one pass over a resolved change set gives the merge and its audit."""

    counts: ChangeCounts
    keys: Optional[List[str]]  # every key, when there are at most KEYS_COLLECTED of them


class MirrorWriter:
    """Writes one change set into the mirror: staged under the target's WAP id (a MERGE touching
    only the files the change keys can reach, or a whole rebuild), audited, then published with
    the checkpoint in one commit. Counts go to the table's result."""

    def __init__(self, session: Any, catalog: IcebergCatalog, ns: str, name: str, mirror_q: str,
                 result: TableResult, delete_mode: str) -> None:
        self.session, self.catalog, self.files = session, catalog, FileListing(catalog)
        self.ns, self.name, self.mirror_q, self.result = ns, name, mirror_q, result
        self.delete_mode = delete_mode

    def summarize(self, frame: DataFrame, most: Optional[int] = None) -> ChangeSummary:
        """One pass over the (cached) change set: its keys and actions when it can hold at most
        KEYS_COLLECTED keys (`most`: an upper bound, the records of the files it was read from),
        else only its counts."""
        from pyspark.sql import functions as F

        if most is not None and most <= KEYS_COLLECTED:
            rows = frame.select(KEY, ACTION).collect()
            upserts = sum(1 for r in rows if r[1] == "U")
            return ChangeSummary(ChangeCounts(upserts, len(rows) - upserts), [r[0] for r in rows])
        upsert = F.col(ACTION) == F.lit("U")
        row = frame.agg(F.sum(upsert.cast("long")).alias("u"), F.sum((~upsert).cast("long")).alias("d")).collect()[0]
        return ChangeSummary(ChangeCounts(int(row["u"] or 0), int(row["d"] or 0)), None)

    def shape(self, mirror: TableState, keys: Optional[List[str]], key_range: Optional[Tuple[str, str]]) -> MergeShape:
        """Which mirror files the change keys can touch, from the key metrics of the mirror's files
        (its manifests, no data read: through Iceberg's API for a mirror of few files, else a
        metadata query). Without the keys, the change set's key range stands in."""
        current = mirror.snapshot(mirror.current_id)
        if current is not None and current.summary_int(Summary.TOTAL_DATA_FILES) <= FILES_LISTED_DIRECTLY \
                and mirror.key_field_id is not None:
            files = self.files.data_file_bounds(self.ns, self.name, mirror.key_field_id)
        else:
            metrics = f"readable_metrics.{quote(KEY)}"
            files = [FileBounds(r[0], r[1], r[2], int(r[3] or 0)) for r in self.session.sql(
                f"SELECT file_path, {metrics}.lower_bound, {metrics}.upper_bound, file_size_in_bytes "
                f"FROM {self.mirror_q}.{quote('files')} WHERE content = 0").collect()]
        return merge_shape(files, keys) if keys is not None else unknown_shape(files, key_range)

    def stage(self, cs: ChangeSet, marker: Marker, mirror: TableState, fmt: MirrorFormat,
              shape: Optional[MergeShape] = None, keys: Optional[List[str]] = None) -> Optional[Snapshot]:
        """Write the change set as a staged snapshot on the mirror's current one; returns it, or
        None when the write changed nothing. A copy-on-write merge writes as core/pruning.py's
        cow_write says (without a global sort when that buys nothing)."""
        self.session.conf.set("spark.wap.id", marker.wap_id)
        conf, partitions = self._write_conf(cs, mirror, fmt, shape)
        before = {key: self.session.conf.get(key, None) for key in conf}
        for key, value in conf.items():
            self.session.conf.set(key, value)
        choice = choose_write(shape, fmt == MirrorFormat.COW, mirror.partitioned, None if keys is None else len(keys),
                              cs.rebuild, mirror.current_id is not None)
        if isinstance(choice, WholeRewrite) and choice.if_every_file_touched and keys is not None and \
                shape is not None and not self._touches_every_file(keys, shape, int(mirror.current_id or 0)):
            choice = KeyMerge()
        try:
            if isinstance(choice, Rebuild):
                self._rebuild(cs, mirror)
            elif isinstance(choice, WholeRewrite):
                self._rewrite_whole(cs, keys or [], int(mirror.current_id or 0), mirror.partitioned)
            else:
                listed = keys if choice.listed else None
                self._merge(cs, mirror, shape.intervals if shape is not None else None, listed, partitions)
        finally:
            self.session.conf.unset("spark.wap.id")
            for key, value in before.items():  # back to what the run set (unset would drop a launch setting)
                if value is None:
                    self.session.conf.unset(key)
                else:
                    self.session.conf.set(key, value)
        after = self.catalog.state(self.ns, self.name)
        staged = [s for s in staged_for(after, marker) if s.parent_id == after.current_id]
        return staged[0] if staged else None

    def _write_conf(self, cs: ChangeSet, mirror: TableState, fmt: MirrorFormat,
                    shape: Optional[MergeShape]) -> Tuple[Dict[str, str], Optional[int]]:
        """(session settings for the write, partitions of the change set for the join or None)."""
        conf: Dict[str, str] = {}
        if fmt == MirrorFormat.COW and not cs.rebuild:
            # A cow MERGE is a full outer join of the mirror's touched files with the change set: a
            # hash of the (small, cached) change set spares sorting the whole rewrite for the join.
            # Spark still picks it only for a side 3x smaller and under its broadcast size per partition.
            conf[PREFER_SORT_MERGE] = "false"
        if mirror.partitioned and (cs.rebuild or fmt == MirrorFormat.COW):
            # Written by partition (the table's distribution): sized by the advisory size alone, a
            # mirror of a few hundred MB is one task sorting and writing every partition's file (1M
            # rows in 16 buckets, a cow merge's write: 16 s in one task, 7.7 s in three).
            conf[PARALLELISM_FIRST] = "true"
        if fmt != MirrorFormat.COW or cs.rebuild or shape is None:
            return conf, None
        target = mirror_target_bytes(mirror.properties)
        plan = cow_write(shape, target, int(self.session.sparkContext.defaultParallelism), mirror.partitioned)
        partitions = None
        if plan.hash:  # unpartitioned: no exchange before the write; the join's partitions are the files
            conf[DISTRIBUTION_MODE] = "hash"
            partitions = plan.partitions
        if not plan.find_files:
            conf[GROUP_FILTER] = "false"
        return conf, partitions

    def _rebuild(self, cs: ChangeSet, mirror: TableState) -> None:
        from pyspark.sql import functions as F

        rows = aligned_rows(cs.frame, self.session.table(self.mirror_q).schema)
        writer = rows.writeTo(self.mirror_q)
        if not mirror.partitioned or (cs.clustered_by is not None
                                      and cs.clustered_by == tuple(spec_terms(self.catalog.load(self.ns, self.name)))):
            # Already partitioned and sorted as the mirror wants (by key range, or by the mirror's
            # partitions): written as it is, no second shuffle or sort.
            writer = writer.option("use-table-distribution-and-ordering", "false")
        else:
            # By partition (hashed: a mirror with a sort order would otherwise take a range
            # distribution, whose sampling pass computes the rows twice: 3.3 s of a 1M-row load).
            # Written as the key ranges are, every range would write a file into every partition.
            writer = writer.option("distribution-mode", "hash")
        if mirror.current_id is None:
            writer.append()
        else:
            writer.overwrite(F.lit(True))

    def _touches_every_file(self, keys: List[str], shape: MergeShape, read_id: int) -> bool:
        """Whether the changed keys are in every one of the mirror's `shape.files` files at
        `read_id`, the snapshot a whole rewrite reads and validates from (core/pruning.py
        counts_touched_files says when this count is worth its scan)."""
        rows = self.session.sql(f"SELECT * FROM {self.mirror_q} VERSION AS OF {int(read_id)}")
        return rows.where(key_condition("", keys)).select("_file").distinct().count() == shape.files

    def _rewrite_whole(self, cs: ChangeSet, keys: List[str], read_id: int, partitioned: bool) -> None:
        """The mirror's rows without the changed keys, plus the upserts, replacing every file: what
        the MERGE would write, without its join. Unpartitioned, one file in the mirror's sort order;
        partitioned, by the table's partitions, each in its sort order. Read at snapshot `read_id`;
        as the MERGE's, the commit fails if the mirror got data since."""
        from pyspark.sql import functions as F

        # The mirror's files at `read_id`, read with its current schema (it may have followed the
        # source since: new or renamed columns), as its scan tasks (time travel reads a snapshot
        # with that snapshot's schema, which would lose a renamed column's values).
        sets = TaskSets(self.session, self.catalog.load(self.ns, self.name), self.mirror_q)
        cs.on_close(sets.close)
        plan = sets.plan(read_id).tasks
        rows = sets.read([plan.get(i) for i in range(int(plan.size()))])
        rows = rows.where(key_condition("", keys, listed=False)).unionByName(aligned_rows(cs.frame, rows.schema))
        if partitioned:  # hashed by partition (the sort order would make Iceberg ask for a sampled range)
            writer = rows.writeTo(self.mirror_q).option("distribution-mode", "hash")
        else:  # no exchange (one task); the table's sort order still sorts the file
            writer = rows.coalesce(1).writeTo(self.mirror_q).option("distribution-mode", "none")
        (writer.option("validate-from-snapshot-id", str(read_id)).option("isolation-level", "serializable")
         .overwrite(F.lit(True)))

    def _merge(self, cs: ChangeSet, mirror: TableState, intervals: Optional[Tuple[Tuple[str, str], ...]],
               listed: Optional[List[str]], partitions: Optional[int]) -> None:
        from pyspark.sql import functions as F

        view = f"olake_cow_changes_{uuid.uuid4().hex[:12]}"
        # The join takes its partitions from the change set's, when it is partitioned by key.
        changes = cs.frame.repartition(partitions, F.col(KEY)) if partitions else cs.frame
        view_of(self.session, changes).createOrReplaceTempView(view)
        try:
            cols = list(mirror.columns) or self.session.table(self.mirror_q).columns
            self.session.sql(merge_sql(self.mirror_q, quote(view), cols, cs.frame.columns, intervals, listed))
        finally:
            self.session.catalog.dropTempView(view)

    def publish(self, staged: Snapshot, marker: Marker, counts: ChangeCounts, parent_rows: int,
                rebuild: bool, fmt: MirrorFormat) -> None:
        """Audit the staged snapshot, then publish it with the checkpoint (one commit). A snapshot that
        fails is recorded as rejected on the mirror, so no later run tries to publish it again."""
        try:
            audit(staged, parent_rows, counts, rebuild, self.result.mirror, fmt)
        except AuditError:
            mirror = self.catalog.state(self.ns, self.name)
            self.catalog.set_property(self.ns, self.name, REJECTED_PROPERTY, with_rejected(mirror, staged.snapshot_id))
            raise
        self.catalog.publish(self.ns, self.name, staged.snapshot_id, marker.wap_id,
                             {DELETE_MODE_PROPERTY: self.delete_mode})
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
        self.catalog.set_checkpoint(self.ns, self.name, marker.wap_id)
        self.result.rows_deleted += counts.deletes


def view_of(session: Any, frame: DataFrame) -> DataFrame:
    """`frame` as a temporary view can hold it. Spark 4.1 resolves the Iceberg tables of a view's
    plan again when a query reads the view, and a staged task set (scan_tasks.py) is no table its
    catalog can load again ("No plan for TableReference"): there the view gets the rows read once
    (a local checkpoint of the persisted change set), not the reads themselves."""
    if int(str(session.version).split(".")[0]) < 4:
        return frame
    return frame.localCheckpoint(eager=False)
