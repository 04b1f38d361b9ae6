"""Reads the change set of a Merge step from the source table (Spark adapter).

Three readings, chosen by the change source (changesource.py):
  rebuild              every row of one source snapshot (first build, recreated source, resync)
  boundary_change_set  truncate mode: the snapshot before a boundary holds exactly one change set
  history_change_set   readonly mode: what changed between two snapshots, interval by interval
                       (history.py explains the rules; this module does the reading)
"""
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Sequence, Set, Tuple

from ..core.errors import ResyncNeededError, UnsupportedDeleteError
from ..core.identifiers import quote
from ..core.readonly import Interval
from ..core.snapshots import Snapshot, Summary, TableState
from .changes import ACTION, KEY, PART, compose, latest_per_key, range_partitioned_latest, upsert_action
from .iceberg import IcebergTables
from .scan_tasks import FileRef, TaskSets

DATA, POSITION_DELETES, EQUALITY_DELETES = 0, 1, 2
# Field id of `file_path` in position-delete files (MetadataColumns.DELETE_FILE_PATH): its bounds
# say which data files a position-delete file can point at, without reading it.
DELETE_FILE_PATH_ID = 2147483546
ENTRIES_LISTED_DIRECTLY = 500  # up to this many files in the candidate manifests: read them through Iceberg's API


@dataclass
class ChangeSet:
    """A resolved change set: `frame` has one row per key and ACTION ('U' upsert, 'D' delete);
    for a rebuild it holds the new mirror's rows, range-partitioned by key. `close()` frees what
    reading it staged (call it after the write)."""

    frame: Any
    rebuild: bool
    files_read: int = 0
    bytes_read: int = 0
    # At most this many keys (the records of the files read: an upper bound); None: unknown.
    records_read: Optional[int] = 0
    notes: List[str] = field(default_factory=list)
    # Lowest and highest key the change set can hold, from the file metadata (a superset; None:
    # unknown). The merge uses it to skip mirror files; it costs no pass over the data.
    key_range: Optional[Tuple[str, str]] = None
    _cleanup: List[Callable[[], None]] = field(default_factory=list)

    def count_read(self, files: int, size: int, records: int) -> None:
        """Add what one reading read (records: toward the bound on the keys, while it is known)."""
        self.files_read += files
        self.bytes_read += size
        if self.records_read is not None:
            self.records_read += records

    def close(self) -> None:
        for fn in reversed(self._cleanup):
            fn()
        self._cleanup.clear()


@dataclass(frozen=True)
class _Entry:
    seq: int
    content: int
    file: FileRef
    dv: bool
    referenced: Optional[str]
    equality_ids: Sequence[int]
    lo: Optional[str]  # the file's `_olake_id` bounds (truncated, still inclusive)
    hi: Optional[str]
    # position-delete files: bounds of the data file paths they point at (UTF-8 bytes)
    ref_lo: Optional[bytes] = None
    ref_hi: Optional[bytes] = None

    @property
    def path(self) -> str:
        return self.file.path

    def may_point_at(self, data_path: str) -> bool:
        """Whether this position-delete file can hold positions of `data_path` (by its bounds;
        True when they are unknown)."""
        if self.referenced:
            return self.referenced == data_path
        if self.ref_lo is None or self.ref_hi is None:
            return True
        return self.ref_lo <= data_path.encode("utf-8") <= self.ref_hi


def _span(bounds: Sequence[Tuple[Optional[str], Optional[str]]]) -> Optional[Tuple[str, str]]:
    """The key range covering all `bounds`; None when any is unknown (or there are none)."""
    if not bounds or any(lo is None or hi is None for lo, hi in bounds):
        return None
    return min(str(lo) for lo, _ in bounds), max(str(hi) for _, hi in bounds)


class ChangeReader:
    def __init__(self, session, tables: IcebergTables, namespace: str, table: str, source_q: str,
                 source: TableState, delete_mode: str, target_file_bytes: int = 128 * 1024 * 1024) -> None:
        self.session, self.tables = session, tables
        self.namespace, self.table, self.source_q = namespace, table, source_q
        self.source, self.delete_mode = source, delete_mode
        self.key_field_id = source.key_field_id
        self.target_file_bytes = target_file_bytes

    # --- whole snapshots ----------------------------------------------------------------------
    def _snapshot_rows(self, snapshot_id: Optional[int]):
        if snapshot_id is None:
            return self.session.sql(f"SELECT * FROM {self.source_q} LIMIT 0")
        return self.session.sql(f"SELECT * FROM {self.source_q} VERSION AS OF {int(snapshot_id)}")

    def _whole_snapshot_io(self, snapshot_id: Optional[int], cs: ChangeSet) -> None:
        snap = self.source.snapshot(snapshot_id)
        if snap is not None:
            cs.count_read(snap.summary_int(Summary.TOTAL_DATA_FILES) + snap.summary_int(Summary.TOTAL_DELETE_FILES),
                          snap.summary_int(Summary.TOTAL_FILES_SIZE),
                          snap.summary_int(Summary.TOTAL_RECORDS) + snap.summary_int(Summary.TOTAL_EQ_DELETES)
                          + snap.summary_int(Summary.TOTAL_POS_DELETES))

    def rebuild(self, snapshot_id: Optional[int], note: str = "") -> ChangeSet:
        """Every row of the snapshot, one per key, range-partitioned and sorted by key on the way
        (the one shuffle serves the resolution and the mirror's sort order); not persisted: the
        source is scanned once by the write, and its key column once for the ranges."""
        snap = self.source.snapshot(snapshot_id)
        size = snap.summary_int(Summary.TOTAL_FILES_SIZE) if snap else 0
        records = snap.summary_int(Summary.TOTAL_RECORDS) if snap else 0
        latest, _ = range_partitioned_latest(self.session, self._snapshot_rows(snapshot_id),
                                             rebuild_partitions(size, self.target_file_bytes, self._cores()), records)
        cs = ChangeSet(latest.withColumn(ACTION, upsert_action(latest, self.delete_mode)), rebuild=True,
                       notes=[note] if note and note != "first build" else [])
        self._whole_snapshot_io(snapshot_id, cs)
        return cs

    def _cores(self) -> int:
        return int(self.session.sparkContext.defaultParallelism)

    def boundary_change_set(self, snapshot_id: Optional[int], dropped_window: Sequence[int] = ()) -> ChangeSet:
        """Truncate mode: the change-set snapshot's rows, and the keys of its equality-delete files
        that have no visible row (the previous boundary removed every older delete file). When a
        rewrite in the change set dropped delete files, `dropped_window` names the change set's
        snapshots, and the delete files they added are read too (their keys may lie outside every
        file left: they count toward the change set's key range and its bound on keys)."""
        from pyspark import StorageLevel
        from pyspark.sql import functions as F

        latest = latest_per_key(self._snapshot_rows(snapshot_id))
        changes = latest.withColumn(ACTION, upsert_action(latest, self.delete_mode))
        cs = ChangeSet(None, rebuild=False)
        dropped_bounds: List[Tuple[Optional[str], Optional[str]]] = []
        try:
            if snapshot_id is not None:
                cols = ("file_path AS path, file_format AS format, file_size_in_bytes AS size, "
                        "record_count AS records, equality_ids AS eq")
                rows = self.session.sql(
                    f"SELECT {cols} FROM {self.source_q}.{quote('delete_files')} "
                    f"VERSION AS OF {int(snapshot_id)} WHERE content = {EQUALITY_DELETES}").collect()
                live = {r["path"] for r in rows}
                if dropped_window:
                    metrics = f"readable_metrics.{quote(KEY)}"
                    dropped = [r for r in self.session.sql(
                        f"SELECT DISTINCT {', '.join('data_file.' + c for c in cols.split(', '))}, "
                        f"{metrics}.lower_bound AS lo, {metrics}.upper_bound AS hi "
                        f"FROM {self.source_q}.{quote('all_entries')} WHERE data_file.content = {EQUALITY_DELETES} "
                        f"AND snapshot_id IN ({', '.join(str(int(s)) for s in dropped_window)})").collect()
                        if r["path"] not in live]
                    dropped = list({r["path"]: r for r in dropped}.values())
                    cs.count_read(len(dropped), sum(int(r["size"] or 0) for r in dropped),
                                  sum(int(r["records"] or 0) for r in dropped))
                    dropped_bounds = [(r["lo"], r["hi"]) for r in dropped]
                    rows += dropped
                unique = {r["path"]: r for r in rows}
                files = [self._check_equality_delete(_file_ref(r), r["eq"]) for _, r in sorted(unique.items())]
                if files:
                    sets = TaskSets(self.session, self.tables.load(self.namespace, self.table), self.source_q)
                    cs._cleanup.append(sets.close)
                    keys = self._equality_keys(sets, files).distinct()  # one 'D' row per key for the MERGE
                    delete_only = keys.join(latest.select(KEY), on=KEY, how="left_anti").withColumn(ACTION, F.lit("D"))
                    changes = changes.unionByName(delete_only, allowMissingColumns=True)
            cs.frame = changes.persist(StorageLevel.MEMORY_AND_DISK)
            cs._cleanup.append(cs.frame.unpersist)
        except BaseException:
            cs.close()
            raise
        self._whole_snapshot_io(snapshot_id, cs)
        if snapshot_id is not None:  # the change set's key range, from its files' metrics
            row = self.session.sql(
                f"SELECT min(readable_metrics.{quote(KEY)}.lower_bound) AS lo, "
                f"max(readable_metrics.{quote(KEY)}.upper_bound) AS hi, count(*) AS n, "
                f"count(readable_metrics.{quote(KEY)}.upper_bound) AS known "
                f"FROM {self.source_q}.{quote('files')} VERSION AS OF {int(snapshot_id)}").collect()[0]
            if row["n"] and row["n"] == row["known"]:
                cs.key_range = _span([(row["lo"], row["hi"])] + dropped_bounds)
            elif not row["n"]:
                cs.key_range = _span(dropped_bounds)
        return cs

    def _check_equality_delete(self, file: FileRef, ids: Optional[Sequence[int]]) -> FileRef:
        if list(ids or []) != [self.key_field_id]:
            raise UnsupportedDeleteError(
                f"equality delete file {file.path} deletes by field ids {list(ids or [])}, not by _olake_id "
                f"(field id {self.key_field_id}); only _olake_id deletes are supported")
        return file

    def _equality_keys(self, sets: TaskSets, files: Sequence[FileRef]):
        """The keys equality-delete files delete (a key may repeat), read by Iceberg's reader
        through the table's FileIO."""
        return sets.read(sets.file_tasks(files)).select(KEY)

    # --- readonly: what changed between two snapshots -----------------------------------------
    def rewrite_output_sequences(self, rewrites: Sequence[Snapshot]) -> Dict[int, int]:
        """replace snapshot id -> data sequence number of the data files it wrote."""
        out = {}
        for snap in rewrites:
            seq = self.tables.added_data_sequence(self.namespace, self.table, snap.snapshot_id)
            if seq is not None:
                out[snap.snapshot_id] = seq
        return out

    def history_change_set(self, intervals: Sequence[Interval]) -> ChangeSet:
        from pyspark import StorageLevel
        from pyspark.sql import functions as F

        java_table = self.tables.load(self.namespace, self.table)
        sets = TaskSets(self.session, java_table, self.source_q)
        cs = ChangeSet(None, rebuild=False, _cleanup=[sets.close])
        bounds: List[Tuple[Optional[str], Optional[str]]] = []
        try:
            row_parts: List[Any] = []
            key_parts: List[Any] = []
            for part, iv in enumerate(intervals):
                rows, keys = self._interval(sets, iv, cs, bounds)
                if rows is not None:
                    row_parts.append(rows.withColumn(PART, F.lit(part)))
                # compose() unions every part and keeps one row per key: a repeated key needs no distinct
                key_parts.extend(k.withColumn(PART, F.lit(part)) for k in keys)
            # The table's schema only types key-only parts and an empty change set (a lookup costs an analysis).
            schema = self.session.table(self.source_q).schema if key_parts or not row_parts else None
            frame = compose(row_parts, key_parts, self.delete_mode, schema)
            if frame is None:
                frame = self.session.createDataFrame([], schema).withColumn(ACTION, F.lit("U"))
            cs.frame = frame.persist(StorageLevel.MEMORY_AND_DISK)
            cs._cleanup.append(cs.frame.unpersist)
            cs.key_range = _span(bounds)
            return cs
        except BaseException:
            cs.close()
            raise

    def _entries(self, iv: Interval) -> List[_Entry]:
        """Data and delete files live at the interval's end and newer than its start: from the
        manifests through Iceberg's API when they list few files, else the `entries` table."""
        listed = self.tables.live_files_after(self.namespace, self.table, iv.end_id, iv.start_seq,
                                              self.key_field_id, DELETE_FILE_PATH_ID, ENTRIES_LISTED_DIRECTLY)
        if listed is None:
            listed = self._entries_table(iv)
        return [_Entry(e["seq"], e["content"], FileRef(e["path"], e["format"].upper(), e["size"], e["records"]),
                       e["format"].upper() == "PUFFIN", e["ref"], e["eq"], e["lo"], e["hi"],
                       e["ref_lo"], e["ref_hi"]) for e in listed]

    def _entries_table(self, iv: Interval) -> List[Dict[str, Any]]:
        """What live_files_after gives, from the `entries` metadata table (a Spark job)."""
        ref = "data_file.referenced_data_file"  # Iceberg 1.7+ (the job needs 1.10)
        rows = self.session.sql(
            f"SELECT sequence_number, data_file.content AS content, data_file.file_path AS path, "
            f"data_file.file_size_in_bytes AS size, data_file.record_count AS records, "
            f"data_file.file_format AS format, {ref} AS ref, data_file.equality_ids AS eq, "
            f"readable_metrics.{quote(KEY)}.lower_bound AS lo, readable_metrics.{quote(KEY)}.upper_bound AS hi, "
            f"data_file.lower_bounds[{DELETE_FILE_PATH_ID}] AS ref_lo, "
            f"data_file.upper_bounds[{DELETE_FILE_PATH_ID}] AS ref_hi FROM {self.source_q}.{quote('entries')} "
            f"VERSION AS OF {iv.end_id} WHERE status < 2 AND sequence_number > {iv.start_seq}").collect()
        return [{"seq": int(r["sequence_number"]), "content": int(r["content"]), "path": r["path"],
                 "format": str(r["format"]), "size": int(r["size"] or 0), "records": int(r["records"] or 0),
                 "ref": r["ref"], "eq": tuple(r["eq"] or ()), "lo": r["lo"], "hi": r["hi"],
                 "ref_lo": _bytes(r["ref_lo"]), "ref_hi": _bytes(r["ref_hi"])} for r in rows]

    def _interval(self, sets: TaskSets, iv: Interval, cs: ChangeSet, bounds: List[Tuple[Optional[str], Optional[str]]]):
        """(visible new rows or None, [DataFrames of deleted keys]) of one interval; adds the key
        bounds of what it reads to `bounds` (unknown bounds for keys found in older files)."""
        entries = self._entries(iv)
        bounds.extend((e.lo, e.hi) for e in entries if e.content in (DATA, EQUALITY_DELETES))
        fresh = [e.path for e in entries if e.content == DATA]
        equality = [self._check_equality_delete(e.file, e.equality_ids) for e in entries
                    if e.content == EQUALITY_DELETES]
        positional = [e for e in entries if e.content == POSITION_DELETES]
        cs.count_read(len(entries), sum(e.file.size for e in entries), sum(e.file.records for e in entries))
        end_plan = sets.plan(iv.end_id) if fresh or positional else None
        rows = sets.read(end_plan.pick(fresh)) if fresh and end_plan is not None else None
        keys = []
        if equality:
            keys.append(self._equality_keys(sets, equality))
        if positional and end_plan is not None:
            held = self._held_files_with_new_deletes(positional, set(fresh), end_plan)
            if held:
                keys.append(self._deleted_from_held(sets, iv, held, end_plan, cs))
                bounds.append((None, None))
        for snapshot_id in iv.removing:
            removed = self._deleted_by_removal(sets, iv, snapshot_id, cs)
            if removed is not None:
                keys.append(removed)
                bounds.append((None, None))
        return rows, keys

    def _held_files_with_new_deletes(self, positional: Sequence[_Entry], fresh: Set[str], end_plan) -> List[str]:
        """Older data files (held by the mirror) that new position deletes or deletion vectors can
        point at: the file a delete file references, else every file within the bounds of the data
        file paths it holds (a superset is safe: unchanged files show no deleted key). No delete
        file is read."""
        held = {p for p in end_plan.paths() if p not in fresh}
        found = {e.referenced for e in positional if e.referenced} & held
        unknown = [e for e in positional if not e.referenced]
        if unknown:
            found |= {p for p in held if any(e.may_point_at(p) for e in unknown)}
        return sorted(found)

    def _deleted_from_held(self, sets: TaskSets, iv: Interval, held: List[str], end_plan, cs: ChangeSet):
        """Keys whose rows in `held` files were visible at the interval's start and are not at its end."""
        if iv.start_id is None:
            raise ResyncNeededError("older source files got new deletes, and the snapshot the mirror holds "
                                    "was expired, so what they showed before cannot be read")
        start_plan = sets.plan(iv.start_id)
        after, before = [], []
        for path in held:
            task = end_plan.task(path)
            after.append(task)
            if path in start_plan:
                before.append(start_plan.task(path))
            elif int(task.file().dataSequenceNumber()) == iv.start_seq:
                # Written by a rewrite that started at the interval's start: it showed every row
                # then, except what equality deletes (kept on both sides) remove.
                before.append(sets.with_deletes(task, lambda d: str(d.content().toString()) == "EQUALITY_DELETES"))
            else:
                raise ResyncNeededError(f"data file {path} is older than the interval it changed in but was "
                                        f"not in source snapshot {iv.start_id}")
            cs.count_read(2, 2 * int(task.file().fileSizeInBytes()), int(task.file().recordCount()))
        shown_before = sets.read(before).select(KEY)
        shown_after = sets.read(after).select(KEY)
        return shown_before.join(shown_after, on=KEY, how="left_anti")

    def _deleted_by_removal(self, sets: TaskSets, iv: Interval, snapshot_id: int, cs: ChangeSet):
        """Keys of rows that older files removed by a content-changing commit showed just before it
        (rows it kept were written again into new files, which are read as new rows)."""
        snap = self.source.snapshot(snapshot_id)
        removed = self.tables.removed_data_files(self.namespace, self.table, snapshot_id)
        held = [path for path, seq in removed if seq <= iv.start_seq]
        if not held:
            return None
        if snap is None or snap.parent_id is None or self.source.snapshot(snap.parent_id) is None:
            raise ResyncNeededError(f"source snapshot {snapshot_id} removed older files, and the snapshot "
                                    "before it was expired")
        tasks = sets.plan(snap.parent_id).pick(held)
        cs.count_read(len(tasks), sum(int(t.file().fileSizeInBytes()) for t in tasks),
                      sum(int(t.file().recordCount()) for t in tasks))
        return sets.read(tasks).select(KEY)


def _file_ref(row) -> FileRef:
    return FileRef(row["path"], str(row["format"]).upper(), int(row["size"] or 0), int(row["records"] or 0))


def _bytes(value) -> Optional[bytes]:
    return bytes(value) if value is not None else None


MIN_RANGES = 32
MIN_RANGE_BYTES = 6 * 1024 * 1024


def rebuild_partitions(source_bytes: int, target_file_bytes: int, cores: int) -> int:
    """How many key ranges (and files) a rebuild writes: files of the target size, but up to 32
    ranges (or one per core, if more) while each keeps 6 MB, so that a copy-on-write merge of keys
    near each other (the newest keys, say) rewrites a small fraction of a small mirror. Measured
    with 5,000 changes among the newest 100,000 decimal keys: at 4M rows, 32 ranges of 7 MB took
    1.75 s a merge where 8 of 27 MB took 2.33 s; at 1M rows, 8 ranges of 7 MB took 1.55 s where 13
    of 4 MB took 1.79 s (smaller files no longer save reading, and spread a change over more)."""
    by_size = -(-source_bytes // max(1, target_file_bytes))
    by_spread = min(max(MIN_RANGES, cores), source_bytes // MIN_RANGE_BYTES)
    return max(1, by_size, by_spread)
