"""A change set and the reading every source mode shares: a whole source snapshot (first build,
recreated source, resync). The per-mode readers build on it: boundary_reader.py (truncate mode),
history_reader.py (readonly mode)."""
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, List, Optional, Sequence, Tuple

from ..core.errors import UnsupportedDeleteError
from ..core.files import equality_delete_problem
from ..core.filesize import rebuild_partitions
from ..core.modes import DeleteMode
from ..core.pruning import key_partition_sql
from ..core.snapshots import Summary, TableState
from .catalog import IcebergCatalog
from .changes import (
    ACTION,
    KEY,
    DataFrame,
    latest_per_key,
    partition_clustered_latest,
    range_partitioned_latest,
    upsert_action,
)
from .file_listing import FileListing
from .mirror_ddl import spec_terms
from .scan_tasks import FileRef, TaskSets

Bounds = Tuple[Optional[str], Optional[str]]  # a file's lowest and highest key (None: unknown)


@dataclass
class ChangeSet:
    """A resolved change set: `frame` has one row per key and ACTION ('U' upsert, 'D' delete);
    for a rebuild it holds the new mirror's rows, range-partitioned by key. `close()` frees what
    reading it staged (call it after the write)."""

    frame: DataFrame
    rebuild: bool
    files_read: int = 0
    bytes_read: int = 0
    # At most this many keys (the records of the files read: an upper bound); None: unknown.
    records_read: Optional[int] = 0
    notes: List[str] = field(default_factory=list)
    # Lowest and highest key the change set can hold, from the file metadata (a superset; None:
    # unknown). The merge uses it to skip mirror files; it costs no pass over the data.
    key_range: Optional[Tuple[str, str]] = None
    # A rebuild's rows already hash-partitioned by this partition spec's values ((transform,
    # column) terms) and sorted by them and key in each partition: written as they are.
    clustered_by: Optional[Tuple[Tuple[str, str], ...]] = None
    _cleanup: List[Callable[[], Any]] = field(default_factory=list)

    def count_read(self, files: int, size: int, records: int) -> None:
        """Add what one reading read (records: toward the bound on the keys, while it is known)."""
        self.files_read += files
        self.bytes_read += size
        if self.records_read is not None:
            self.records_read += records

    def on_close(self, fn: Callable[[], Any]) -> None:
        self._cleanup.append(fn)

    def hold(self, frame: DataFrame) -> None:
        """Keep `frame` as the change set's rows (persisted until close), in as few partitions as
        its bound on keys needs (held_partitions)."""
        from pyspark import StorageLevel

        parts = held_partitions(self.records_read)
        self.frame = (frame.coalesce(parts) if parts is not None else frame).persist(StorageLevel.MEMORY_AND_DISK)
        self.on_close(self.frame.unpersist)

    def close(self) -> None:
        for fn in reversed(self._cleanup):
            fn()
        self._cleanup.clear()


ROWS_PER_HELD_PARTITION = 500_000


def held_partitions(records: Optional[int]) -> Optional[int]:
    """Partitions for a persisted change set of at most `records` keys (about 500,000 each; None:
    unknown, as planned). Spark plans what it persists without adaptive execution, so the shuffle
    that keeps one row per key stays at spark.sql.shuffle.partitions (EMR's default 200): a change
    of ten keys was 200 tasks to resolve, 200 to summarize and 200 more for the merge to read."""
    if records is None:
        return None
    return max(1, -(-records // ROWS_PER_HELD_PARTITION))


SINGLE_TASK_RECORDS = 100_000


def single_task(records: Optional[int]) -> bool:
    """Whether a change set read from files of at most `records` records (None: unknown) is
    resolved in one task: a few MB at most, where a shuffle's second stage costs a cold run more
    than one task's sort."""
    return records is not None and records <= SINGLE_TASK_RECORDS


def span(bounds: Sequence[Bounds]) -> Optional[Tuple[str, str]]:
    """The key range covering all `bounds`; None when any is unknown (or there are none)."""
    if not bounds or any(lo is None or hi is None for lo, hi in bounds):
        return None
    return min(str(lo) for lo, _ in bounds), max(str(hi) for _, hi in bounds)


@dataclass(frozen=True)
class SourceTable:
    """The source table a reader reads: its name in the catalog, its SQL name and its metadata."""

    namespace: str
    table: str
    sql_name: str  # catalog.namespace.table, quoted
    state: TableState


class SnapshotReader:
    """Reads a source table's change sets (the core's change sources choose what to read)."""

    def __init__(self, session: Any, catalog: IcebergCatalog, source: SourceTable, delete_mode: DeleteMode,
                 target_file_bytes: int) -> None:
        self.session, self.catalog = session, catalog
        self.files = FileListing(catalog)
        self.source, self.delete_mode = source, delete_mode
        self.key_field_id = source.state.key_field_id
        self.target_file_bytes = target_file_bytes

    def _snapshot_rows(self, snapshot_id: Optional[int]) -> DataFrame:
        if snapshot_id is None:
            return self.session.sql(f"SELECT * FROM {self.source.sql_name} LIMIT 0")
        return self.session.sql(f"SELECT * FROM {self.source.sql_name} VERSION AS OF {int(snapshot_id)}")

    def _whole_snapshot_io(self, snapshot_id: Optional[int], cs: ChangeSet) -> None:
        snap = self.source.state.snapshot(snapshot_id)
        if snap is not None:
            cs.count_read(snap.summary_int(Summary.TOTAL_DATA_FILES) + snap.summary_int(Summary.TOTAL_DELETE_FILES),
                          snap.summary_int(Summary.TOTAL_FILES_SIZE),
                          snap.summary_int(Summary.TOTAL_RECORDS) + snap.summary_int(Summary.TOTAL_EQ_DELETES)
                          + snap.summary_int(Summary.TOTAL_POS_DELETES))

    def rebuild(self, snapshot_id: Optional[int], note: str = "") -> ChangeSet:
        """Every row of the snapshot, one per key: for an unpartitioned source range-partitioned and
        sorted by key on the way (the one shuffle serves the resolution and the mirror's sort
        order). Not persisted: the source is scanned once by the write, and for the ranges its key
        column once more."""
        snap = self.source.state.snapshot(snapshot_id)
        size = snap.summary_int(Summary.TOTAL_FILES_SIZE) if snap else 0
        records = snap.summary_int(Summary.TOTAL_RECORDS) if snap else 0
        rows = self._snapshot_rows(snapshot_id)
        clustered_by = None
        if self.source.state.partitioned:
            # The mirror keeps the source's spec and is written by partition: key ranges would be
            # shuffled away again, so no pass to sample them. A spec of the key alone (a bucket)
            # takes one shuffle by partition for both one row per key and the write.
            terms = tuple(spec_terms(self.catalog.load(self.source.namespace, self.source.table)))
            exprs = key_partition_sql(terms, self.catalog.catalog_name)
            if exprs:
                latest, clustered_by = partition_clustered_latest(rows, exprs), terms
            else:
                latest = latest_per_key(rows)
        else:
            cores = int(self.session.sparkContext.defaultParallelism)
            ranges = rebuild_partitions(size, self.target_file_bytes, cores)
            with self._stored_rows(snapshot_id, wanted=ranges > 1) as stored:
                latest, _ = range_partitioned_latest(self.session, rows, ranges, records, stored)
        cs = ChangeSet(latest.withColumn(ACTION, upsert_action(latest, self.delete_mode)), rebuild=True,
                       notes=[note] if note and note != "first build" else [], clustered_by=clustered_by)
        self._whole_snapshot_io(snapshot_id, cs)
        return cs

    @contextmanager
    def _stored_rows(self, snapshot_id: Optional[int], wanted: bool) -> Iterator[Optional[DataFrame]]:
        """The snapshot's data files as stored, deletes not applied (None when not `wanted`, or for
        no snapshot), where a rebuild samples its key ranges: a deleted key moves a bound little,
        and applying the deletes cost the sample about a whole scan of the table."""
        if snapshot_id is None or not wanted:
            yield None
            return
        sets = self._task_sets()
        try:
            yield sets.stored_rows(snapshot_id)
        finally:
            sets.close()

    def _task_sets(self) -> TaskSets:
        return TaskSets(self.session, self.catalog.load(self.source.namespace, self.source.table),
                        self.source.sql_name)

    def _check_equality_delete(self, file: FileRef, ids: Optional[Sequence[int]]) -> FileRef:
        problem = equality_delete_problem(file.path, ids or (), self.key_field_id)
        if problem is not None:
            raise UnsupportedDeleteError(problem)
        return file

    def _equality_keys(self, sets: TaskSets, files: Sequence[FileRef]) -> DataFrame:
        """The keys equality-delete files delete (a key may repeat), read by Iceberg's reader
        through the table's FileIO."""
        return sets.read(sets.file_tasks(files)).select(KEY)
