"""Readonly mode's reader: what changed in OLake's table between two snapshots, interval by
interval (core/readonly.py has the rules; this module does the reading). It never writes to the
source."""
from typing import Any, Dict, List, Optional, Sequence, Set, Tuple

from ..core.errors import ResyncNeededError
from ..core.files import (
    DATA,
    DELETE_FILE_PATH_ID,
    EQUALITY_DELETES,
    POSITION_DELETES,
    LiveFile,
    held_files_with_new_deletes,
)
from ..core.identifiers import quote
from ..core.readonly import Interval
from ..core.snapshots import Snapshot
from .change_set import Bounds, ChangeSet, DataFrame, SnapshotReader, single_task, span
from .changes import ACTION, KEY, PART, compose
from .scan_tasks import FileRef, Plan, TaskSets

# Up to this many files in the candidate manifests: read through Iceberg's API, each file about
# 20 py4j calls (13-22 ms); more through the `entries` table, one Spark query (1.7-1.9 s cold,
# 0.4 s warm). A commit into 58 date partitions lists 118 files: 2-4 s faster by the table, cold.
ENTRIES_LISTED_DIRECTLY = 64


class HistoryReader(SnapshotReader):
    """Readonly mode's change sets: the files newer than the checkpoint's sequence number, and the
    keys that deletes and rewrites removed, interval by interval (ReadonlySource.read chooses)."""

    def rewrite_output_sequences(self, rewrites: Sequence[Snapshot]) -> Dict[int, int]:
        """replace snapshot id -> data sequence number of the data files it wrote."""
        out = {}
        for snap in rewrites:
            seq = self.files.added_data_sequence(self.source.namespace, self.source.table, snap.snapshot_id)
            if seq is not None:
                out[snap.snapshot_id] = seq
        return out

    def history_change_set(self, intervals: Sequence[Interval]) -> ChangeSet:
        from pyspark.sql import functions as F

        sets = self._task_sets()
        cs = ChangeSet(None, rebuild=False, _cleanup=[sets.close])
        bounds: List[Bounds] = []
        try:
            row_parts: List[DataFrame] = []
            key_parts: List[DataFrame] = []
            for part, iv in enumerate(intervals):
                rows, keys = self._interval(sets, iv, cs, bounds)
                if rows is not None:
                    row_parts.append(rows.withColumn(PART, F.lit(part)))
                # compose() unions every part and keeps one row per key: a repeated key needs no distinct
                key_parts.extend(k.withColumn(PART, F.lit(part)) for k in keys)
            # The table's schema only types key-only parts and an empty change set (a lookup costs an analysis).
            schema = self.session.table(self.source.sql_name).schema if key_parts or not row_parts else None
            frame = compose(row_parts, key_parts, self.delete_mode, schema, single_task=single_task(cs.records_read))
            if frame is None:
                frame = self.session.createDataFrame([], schema).withColumn(ACTION, F.lit("U"))
            cs.hold(frame)
            cs.key_range = span(bounds)
            return cs
        except BaseException:
            cs.close()
            raise

    def _entries(self, iv: Interval) -> List[LiveFile]:
        """Data and delete files live at the interval's end and newer than its start: from the
        manifests through Iceberg's API when they list few files, else the `entries` table."""
        listed = self.files.live_files_after(self.source.namespace, self.source.table, iv.end_id, iv.start_seq,
                                             self.key_field_id, DELETE_FILE_PATH_ID, ENTRIES_LISTED_DIRECTLY)
        return listed if listed is not None else self._entries_table(iv)

    def _entries_table(self, iv: Interval) -> List[LiveFile]:
        """What live_files_after gives, from the `entries` metadata table (a Spark job)."""
        ref = "data_file.referenced_data_file"  # Iceberg 1.7+ (the job needs 1.10)
        rows = self.session.sql(
            f"SELECT sequence_number, data_file.content AS content, data_file.file_path AS path, "
            f"data_file.file_size_in_bytes AS size, data_file.record_count AS records, "
            f"data_file.file_format AS format, {ref} AS ref, data_file.equality_ids AS eq, "
            f"readable_metrics.{quote(KEY)}.lower_bound AS lo, readable_metrics.{quote(KEY)}.upper_bound AS hi, "
            f"data_file.lower_bounds[{DELETE_FILE_PATH_ID}] AS ref_lo, "
            f"data_file.upper_bounds[{DELETE_FILE_PATH_ID}] AS ref_hi FROM {self.source.sql_name}.{quote('entries')} "
            f"VERSION AS OF {iv.end_id} WHERE status < 2 AND sequence_number > {iv.start_seq}").collect()
        return [LiveFile(int(r["sequence_number"]), int(r["content"]), r["path"], str(r["format"]).upper(),
                         int(r["size"] or 0), int(r["records"] or 0), referenced=r["ref"],
                         equality_ids=tuple(r["eq"] or ()), lo=r["lo"], hi=r["hi"],
                         ref_lo=_bytes(r["ref_lo"]), ref_hi=_bytes(r["ref_hi"])) for r in rows]

    def _interval(self, sets: TaskSets, iv: Interval, cs: ChangeSet,
                  bounds: List[Bounds]) -> Tuple[Optional[DataFrame], List[DataFrame]]:
        """(visible new rows or None, [DataFrames of deleted keys]) of one interval; adds the key
        bounds of what it reads to `bounds` (unknown bounds for keys found in older files)."""
        entries = self._entries(iv)
        bounds.extend((e.lo, e.hi) for e in entries if e.content in (DATA, EQUALITY_DELETES))
        fresh = [e.path for e in entries if e.content == DATA]
        equality = [self._check_equality_delete(FileRef(e.path, e.format, e.size, e.records), e.equality_ids)
                    for e in entries if e.content == EQUALITY_DELETES]
        positional = [e for e in entries if e.content == POSITION_DELETES]
        cs.count_read(len(entries), sum(e.size for e in entries), sum(e.records for e in entries))
        end_plan = sets.plan(iv.end_id) if fresh or positional else None
        rows = sets.read(end_plan.pick(fresh)) if fresh and end_plan is not None else None
        keys = [self._equality_keys(sets, equality)] if equality else []
        if end_plan is not None:
            keys += self._deleted_by_position(sets, iv, positional, set(fresh), end_plan, cs, bounds)
        for snapshot_id in iv.removing:
            removed = self._deleted_by_removal(sets, iv, snapshot_id, cs)
            if removed is not None:
                keys.append(removed)
                bounds.append((None, None))
        return rows, keys

    def _deleted_by_position(self, sets: TaskSets, iv: Interval, positional: Sequence[LiveFile], fresh: Set[str],
                             end_plan: Plan, cs: ChangeSet, bounds: List[Bounds]) -> List[DataFrame]:
        held = held_files_with_new_deletes(positional, fresh, end_plan.paths()) if positional else []
        if not held:
            return []
        bounds.append((None, None))
        return [self._deleted_from_held(sets, iv, held, end_plan, cs)]

    def _deleted_from_held(self, sets: TaskSets, iv: Interval, held: List[str], end_plan: Plan,
                           cs: ChangeSet) -> DataFrame:
        """Keys whose rows in `held` files were visible at the interval's start and are not at its end."""
        if iv.start_id is None:
            raise ResyncNeededError("older source files got new deletes, and the snapshot the mirror holds "
                                    "was expired, so what they showed before cannot be read")
        start_plan = sets.plan(iv.start_id)
        after, before = [], []
        for path in held:
            task = end_plan.task(path)
            after.append(task)
            before.append(self._shown_at_start(sets, iv, start_plan, path, task))
            cs.count_read(2, 2 * int(task.file().fileSizeInBytes()), int(task.file().recordCount()))
        shown_before = sets.read(before).select(KEY)
        shown_after = sets.read(after).select(KEY)
        return shown_before.join(shown_after, on=KEY, how="left_anti")

    @staticmethod
    def _shown_at_start(sets: TaskSets, iv: Interval, start_plan: Plan, path: str, task: Any) -> Any:
        """The scan task that reads what `path` showed at the interval's start."""
        if path in start_plan:
            return start_plan.task(path)
        if int(task.file().dataSequenceNumber()) == iv.start_seq:
            # Written by a rewrite that started at the interval's start: it showed every row
            # then, except what equality deletes (kept on both sides) remove.
            return sets.with_deletes(task, lambda d: str(d.content().toString()) == "EQUALITY_DELETES")
        raise ResyncNeededError(f"data file {path} is older than the interval it changed in but was "
                                f"not in source snapshot {iv.start_id}")

    def _deleted_by_removal(self, sets: TaskSets, iv: Interval, snapshot_id: int,
                            cs: ChangeSet) -> Optional[DataFrame]:
        """Keys of rows that older files removed by a content-changing commit showed just before it
        (rows it kept were written again into new files, which are read as new rows)."""
        source = self.source.state
        snap = source.snapshot(snapshot_id)
        removed = self.files.removed_data_files(self.source.namespace, self.source.table, snapshot_id)
        held = [f.path for f in removed if f.seq <= iv.start_seq]
        if not held:
            return None
        if snap is None or snap.parent_id is None or source.snapshot(snap.parent_id) is None:
            raise ResyncNeededError(f"source snapshot {snapshot_id} removed older files, and the snapshot "
                                    "before it was expired")
        tasks = sets.plan(snap.parent_id).pick(held)
        cs.count_read(len(tasks), sum(int(t.file().fileSizeInBytes()) for t in tasks),
                      sum(int(t.file().recordCount()) for t in tasks))
        return sets.read(tasks).select(KEY)


def _bytes(value: Any) -> Optional[bytes]:
    return bytes(value) if value is not None else None
