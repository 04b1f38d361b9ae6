"""Truncate mode's reader: the snapshot before a boundary holds exactly one change set (the
previous boundary removed every older file), so its rows are the upserts and its equality-delete
files' keys without a visible row are the deletes (core/truncate.py has the rules)."""
from typing import Any, Dict, List, Optional, Sequence, Tuple

from ..core.files import EQUALITY_DELETES
from ..core.identifiers import quote
from .change_set import Bounds, ChangeSet, DataFrame, SnapshotReader, span
from .changes import ACTION, KEY, latest_per_key, upsert_action
from .scan_tasks import FileRef

_COLUMNS = ("file_path AS path", "file_format AS format", "file_size_in_bytes AS size",
            "record_count AS records", "equality_ids AS eq")
Row = Any  # pyspark.sql.Row
_REMOVED = 2  # a manifest entry's status: the file was removed by the entry's snapshot


class BoundaryReader(SnapshotReader):
    """Truncate mode's change sets: what a boundary closed (TruncateSource.read chooses)."""

    def boundary_change_set(self, snapshot_id: Optional[int], dropped_window: Sequence[int] = ()) -> ChangeSet:
        """The change-set snapshot's rows, and the keys of its equality-delete files that have no
        visible row. When a rewrite in the change set dropped delete files, `dropped_window` names
        the change set's snapshots, and the delete files they added are read too (their keys may
        lie outside every file left: they count toward the change set's key range and its bound on
        keys)."""
        latest = latest_per_key(self._snapshot_rows(snapshot_id))
        changes = latest.withColumn(ACTION, upsert_action(latest, self.delete_mode))
        cs = ChangeSet(None, rebuild=False)
        dropped: List[Row] = []
        try:
            if snapshot_id is not None:
                live = self._equality_deletes(snapshot_id)
                dropped = self._dropped_equality_deletes(dropped_window, {r["path"] for r in live}, cs)
                changes = self._with_deletes(changes, latest, live + dropped, cs)
            self._whole_snapshot_io(snapshot_id, cs)  # its bound on keys sizes what is held
            cs.hold(changes)
        except BaseException:
            cs.close()
            raise
        if snapshot_id is not None:
            cs.key_range = self._key_range(snapshot_id, [(r["lo"], r["hi"]) for r in dropped])
        return cs

    def _equality_deletes(self, snapshot_id: int) -> List[Row]:
        return self.session.sql(
            f"SELECT {', '.join(_COLUMNS)} FROM {self.source.sql_name}.{quote('delete_files')} "
            f"VERSION AS OF {int(snapshot_id)} WHERE content = {EQUALITY_DELETES}").collect()

    def _dropped_equality_deletes(self, window: Sequence[int], live: set, cs: ChangeSet) -> List[Row]:
        """Equality-delete files the window's snapshots added that a rewrite dropped since. One known
        only by the entry that removed it (the snapshot that added it was expired: a run with
        --resume-from-source) is read while its file exists: the expiry deletes such a file, and its
        deletes are then among the changes OLake's table no longer holds."""
        if not window:
            return []
        metrics = f"readable_metrics.{quote(KEY)}"
        rows = self.session.sql(
            f"SELECT DISTINCT status, {', '.join('data_file.' + c for c in _COLUMNS)}, "
            f"{metrics}.lower_bound AS lo, {metrics}.upper_bound AS hi "
            f"FROM {self.source.sql_name}.{quote('all_entries')} WHERE data_file.content = {EQUALITY_DELETES} "
            f"AND snapshot_id IN ({', '.join(str(int(s)) for s in window)})").collect()
        added = {r["path"] for r in rows if r["status"] != _REMOVED}
        removed_only = {r["path"] for r in rows if r["path"] not in added and r["path"] not in live}
        gone = set()
        if removed_only:
            io = self.catalog.load(self.source.namespace, self.source.table).io()
            gone = {p for p in removed_only if not io.newInputFile(p).exists()}
        skipped = live | gone
        dropped = list({r["path"]: r for r in rows if r["path"] not in skipped}.values())
        cs.count_read(len(dropped), sum(int(r["size"] or 0) for r in dropped),
                      sum(int(r["records"] or 0) for r in dropped))
        return dropped

    def _with_deletes(self, changes: DataFrame, latest: DataFrame, rows: List[Row], cs: ChangeSet) -> DataFrame:
        """`changes` plus a 'D' row for each key the equality-delete files delete and no row upserts."""
        from pyspark.sql import functions as F

        unique: Dict[str, Row] = {r["path"]: r for r in rows}
        files = [self._check_equality_delete(_file_ref(r), r["eq"]) for _, r in sorted(unique.items())]
        if not files:
            return changes
        sets = self._task_sets()
        cs.on_close(sets.close)
        keys = self._equality_keys(sets, files).distinct()  # one 'D' row per key for the MERGE
        delete_only = keys.join(latest.select(KEY), on=KEY, how="left_anti").withColumn(ACTION, F.lit("D"))
        return changes.unionByName(delete_only, allowMissingColumns=True)

    def _key_range(self, snapshot_id: int, dropped: List[Bounds]) -> Optional[Tuple[str, str]]:
        """The change set's key range, from its files' metrics (None: a file has none)."""
        metrics = f"readable_metrics.{quote(KEY)}"
        row = self.session.sql(
            f"SELECT min({metrics}.lower_bound) AS lo, max({metrics}.upper_bound) AS hi, count(*) AS n, "
            f"count({metrics}.upper_bound) AS known "
            f"FROM {self.source.sql_name}.{quote('files')} VERSION AS OF {int(snapshot_id)}").collect()[0]
        if row["n"] and row["n"] == row["known"]:
            return span([(row["lo"], row["hi"]), *dropped])
        if not row["n"]:
            return span(dropped)
        return None


def _file_ref(row: Row) -> FileRef:
    return FileRef(row["path"], str(row["format"]).upper(), int(row["size"] or 0), int(row["records"] or 0))
