"""Readonly mode's change set on Arrow: what changed in OLake's table between two snapshots, interval
by interval (core/readonly.py has the rules; spark/history_reader.py reads the same files the same
way on Spark). It never writes to the source."""
from typing import Any, Dict, List, Optional, Sequence, Set, Tuple

from ..core.errors import NotOlakeTableError, ResyncNeededError, UnsupportedDeleteError
from ..core.files import DATA, EQUALITY_DELETES, POSITION_DELETES, equality_delete_problem, held_files_with_new_deletes
from ..core.modes import DeleteMode
from ..core.readonly import Interval
from ..core.resolution import KEY
from ..core.snapshots import Snapshot, TableState
from .manifests import Entry, Manifests
from .resolve import ArrowChangeSet, compose


class HandOver(Exception):
    """Work the Python engine leaves to the Spark engine (the reason says what and why)."""


class ArrowHistoryReader:
    """core/changesource.ReadsHistory on pyiceberg and Arrow."""

    def __init__(self, table: Any, state: TableState, delete_mode: DeleteMode, whole_source: bool = False) -> None:
        self.table, self.state, self.delete_mode = table, state, delete_mode
        self.key_field_id = state.key_field_id
        self.files = Manifests(table, self.key_field_id)
        self.whole_source = whole_source  # a first build or a rebuild: the whole source may be read

    def rebuild(self, snapshot_id: Optional[int], note: str = "") -> ArrowChangeSet:
        """Every row of the snapshot, one per key, for a first build or a rebuild (`whole_source`). A
        merge that finds it must read the whole source instead (its budget counted a merge) hands the
        table to the Spark engine."""
        if not self.whole_source:
            raise HandOver(f"{note or 'a rebuild'}: reading the whole source is the Spark engine's work")
        empty = self._empty()
        cs = ArrowChangeSet(empty, [])
        if snapshot_id is None:
            return cs
        live = self.files.live(snapshot_id)
        self._check_equality([e for e in live if e.live.content == EQUALITY_DELETES])
        cs.count_read(len(live), sum(e.live.size for e in live))
        rows = self.files.rows([e for e in live if e.live.content == DATA], live)
        self._check_keys([rows])
        # Keys another row deletes are no rows of a new mirror: nothing to delete.
        cs.upserts, _ = compose([(rows, [])], empty, self.delete_mode)
        return cs

    def _empty(self) -> Any:
        from pyiceberg.io.pyarrow import schema_to_pyarrow

        return schema_to_pyarrow(self.table.metadata.schema()).empty_table()

    def _check_keys(self, tables: Sequence[Any]) -> None:
        for rows in tables:
            if rows is not None and rows.num_rows and rows.column(KEY).null_count:
                raise NotOlakeTableError(f"table {self.table.name()} has rows whose _olake_id is NULL; OLake never "
                                         "writes them and the mirror keys on it: fill or remove those rows")

    def _check_equality(self, equality: Sequence[Entry]) -> None:
        for e in equality:
            problem = equality_delete_problem(e.live.path, e.live.equality_ids, self.key_field_id)
            if problem is not None:
                raise UnsupportedDeleteError(problem)

    def rewrite_output_sequences(self, rewrites: Sequence[Snapshot]) -> Dict[int, int]:
        out = {}
        for snap in rewrites:
            seq = self.files.added_data_sequence(snap.snapshot_id)
            if seq is not None:
                out[snap.snapshot_id] = seq
        return out

    def history_change_set(self, intervals: Sequence[Interval]) -> ArrowChangeSet:
        empty = self._empty()
        cs = ArrowChangeSet(empty, [])
        parts: List[Tuple[Any, List[str]]] = []
        for iv in intervals:
            parts.append(self._interval(iv, cs))
        self._check_keys([rows for rows, _ in parts])
        cs.upserts, cs.deletes = compose(parts, empty, self.delete_mode)
        return cs

    def _interval(self, iv: Interval, cs: ArrowChangeSet) -> Tuple[Any, List[str]]:
        entries = self.files.live_after(iv.end_id, iv.start_seq)
        fresh = [e for e in entries if e.live.content == DATA]
        equality = [e for e in entries if e.live.content == EQUALITY_DELETES]
        self._check_equality(equality)
        positional = [e for e in entries if e.live.content == POSITION_DELETES]
        cs.count_read(len(entries), sum(e.live.size for e in entries))
        end = self.files.live(iv.end_id) if fresh or positional else []
        rows = self.files.rows(fresh, end) if fresh else None
        keys: Set[str] = self.files.equality_keys(equality)
        if positional:
            keys |= self._deleted_by_position(iv, [e.live for e in positional], {e.live.path for e in fresh}, end, cs)
        for snapshot_id in iv.removing:
            keys |= self._deleted_by_removal(iv, snapshot_id, cs)
        return rows, sorted(keys)

    def _deleted_by_position(self, iv: Interval, positional: Sequence[Any], fresh: Set[str],
                             end: Sequence[Entry], cs: ArrowChangeSet) -> Set[str]:
        data = {e.live.path: e for e in end if e.live.content == DATA}
        held = held_files_with_new_deletes(positional, fresh, list(data))
        if not held:
            return set()
        if iv.start_id is None:
            raise ResyncNeededError("older source files got new deletes, and the snapshot the mirror holds "
                                    "was expired, so what they showed before cannot be read")
        start = self.files.live(iv.start_id)
        at_start = {e.live.path for e in start if e.live.content == DATA}
        out: Set[str] = set()
        for path in held:
            f = data[path]
            cs.count_read(2, 2 * f.live.size)
            if path in at_start:
                before = self.files.rows([f], start)
            elif f.live.seq == iv.start_seq:
                # Written by a rewrite that started at the interval's start: it showed every row
                # then, except what equality deletes (kept on both sides) remove.
                before = self.files.rows([f], end, positional=False)
            else:
                raise ResyncNeededError(f"data file {path} is older than the interval it changed in but was "
                                        f"not in source snapshot {iv.start_id}")
            after = self.files.rows([f], end)
            out |= set(before.column(KEY).to_pylist()) - set(after.column(KEY).to_pylist())
        return out

    def _deleted_by_removal(self, iv: Interval, snapshot_id: int, cs: ArrowChangeSet) -> Set[str]:
        """Keys of rows that older files removed by a content-changing commit showed just before it."""
        snap = self.state.snapshot(snapshot_id)
        held = [f.path for f in self.files.removed_data_files(snapshot_id) if f.seq <= iv.start_seq]
        if not held:
            return set()
        if snap is None or snap.parent_id is None or self.state.snapshot(snap.parent_id) is None:
            raise ResyncNeededError(f"source snapshot {snapshot_id} removed older files, and the snapshot "
                                    "before it was expired")
        before, held_paths = self.files.live(snap.parent_id), set(held)
        picked = [e for e in before if e.live.content == DATA and e.live.path in held_paths]
        cs.count_read(len(picked), sum(e.live.size for e in picked))
        return set(self.files.rows(picked, before).column(KEY).to_pylist())
