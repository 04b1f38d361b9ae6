"""A table's files at a snapshot, from its manifests (pyiceberg's readers), and the rows a data file
shows at a snapshot: its position deletes and deletion vectors applied by pyiceberg's Arrow scan,
its equality deletes (by _olake_id, newer than the file, in its partition) by key here."""
import json
import os
from dataclasses import dataclass
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Set, Tuple

from ..core.files import DATA, DELETE_FILE_PATH_ID, EQUALITY_DELETES, POSITION_DELETES, LiveFile, RemovedFile
from ..core.resolution import KEY
from ..core.snapshots import TableState, state_from_metadata

Table = Any  # pyiceberg.table.Table
ArrowTable = Any  # pyarrow.Table


@dataclass(frozen=True)
class Entry:
    """A live manifest entry: its file as the core's record and pyiceberg's DataFile."""

    live: LiveFile
    data_file: Any
    spec_id: int
    partition: Tuple[Any, ...]


def state_of(metadata: Any, location: Optional[str] = None) -> TableState:
    """The core's record of pyiceberg's parsed table metadata (the metadata file's own JSON form);
    format version 2 only (pyiceberg 0.12 does not serialize version 3): a cow mirror's."""
    return state_from_metadata(json.loads(metadata.model_dump_json(by_alias=True)), location)


def _text(bounds: Optional[Dict[int, bytes]], field_id: Optional[int]) -> Optional[str]:
    value = (bounds or {}).get(field_id) if field_id is not None else None
    return value.decode("utf-8", "replace") if value is not None else None


def _entry(e: Any, key_field_id: Optional[int]) -> Entry:
    f = e.data_file
    content = int(f.content.value)
    deletes = content != DATA
    lower, upper = f.lower_bounds, f.upper_bounds
    live = LiveFile(int(e.sequence_number), content, f.file_path, str(f.file_format.value).upper(),
                    int(f.file_size_in_bytes), int(f.record_count), None,
                    tuple(f.equality_ids or ()) if deletes else (),
                    lo=_text(lower, key_field_id), hi=_text(upper, key_field_id),
                    ref_lo=(lower or {}).get(DELETE_FILE_PATH_ID) if deletes else None,
                    ref_hi=(upper or {}).get(DELETE_FILE_PATH_ID) if deletes else None)
    return Entry(live, f, int(f.spec_id), tuple(f.partition) if f.partition is not None else ())


def aligned(rows: Any, schema: Any) -> Any:
    """`rows` with exactly the columns of the Arrow `schema` (by name, any case; missing ones null)."""
    import pyarrow as pa

    have = {name.lower(): name for name in rows.column_names}
    cols = []
    for f in schema:
        name = have.get(f.name.lower())
        cols.append(rows.column(name).cast(f.type) if name is not None else pa.nulls(rows.num_rows, f.type))
    return pa.Table.from_arrays(cols, schema=schema)


def on_cores(fn: Callable[[Any], Any], items: Sequence[Any]) -> List[Any]:
    """[fn(item) for item in items], up to one at a time per core (Arrow's kernels, Parquet reads
    and writes release the GIL), in order."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max(1, min(len(items), os.cpu_count() or 1))) as pool:
        return list(pool.map(fn, items))


def without_keys(rows: Any, keys: Sequence[str]) -> Any:
    """`rows` less those whose _olake_id is in `keys`, in order, filtered in one slice per core (a
    spread merge copies most of the mirror here: one thread of a new process spends 0.2-0.3 s on
    1M rows)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if not rows.num_rows or not keys:
        return rows
    drop = pc.is_in(rows.column(KEY), value_set=pa.array(keys, pa.string()))
    step = -(-rows.num_rows // (os.cpu_count() or 1))
    return pa.concat_tables(on_cores(lambda at: rows.slice(at, step).filter(pc.invert(drop.slice(at, step))),
                                     range(0, rows.num_rows, step)))


class Manifests:
    """One table's manifests, each read once per run."""

    def __init__(self, table: Table, key_field_id: Optional[int]) -> None:
        self.table, self.key_field_id = table, key_field_id
        self._read: Dict[Tuple[str, bool], List[Any]] = {}
        self._eq_keys: Dict[str, Set[str]] = {}

    def _manifest(self, m: Any, live_only: bool) -> List[Any]:
        key = (m.manifest_path, live_only)
        if key not in self._read:
            self._read[key] = m.fetch_manifest_entry(self.table.io, discard_deleted=live_only)
        return self._read[key]

    def _snapshot(self, snapshot_id: int) -> Any:
        snap = self.table.metadata.snapshot_by_id(int(snapshot_id))
        if snap is None:
            raise KeyError(f"snapshot {snapshot_id} is not in the table's metadata")
        return snap

    def live(self, snapshot_id: int) -> List[Entry]:
        """Every data and delete file live in the snapshot."""
        out: List[Entry] = []
        for m in self._snapshot(snapshot_id).manifests(self.table.io):
            out.extend(_entry(e, self.key_field_id) for e in self._manifest(m, True))
        return out

    def live_after(self, snapshot_id: int, after_seq: int) -> List[Entry]:
        """Files live in the snapshot with a data sequence number above `after_seq`."""
        out: List[Entry] = []
        for m in self._snapshot(snapshot_id).manifests(self.table.io):
            if int(m.sequence_number) > after_seq:
                out.extend(x for x in (_entry(e, self.key_field_id) for e in self._manifest(m, True))
                           if x.live.seq > after_seq)
        return out

    def added_data_sequence(self, snapshot_id: int) -> Optional[int]:
        """Data sequence number of the first data file the snapshot added."""
        snap = self.table.metadata.snapshot_by_id(int(snapshot_id))
        if snap is None:
            return None
        for m in snap.manifests(self.table.io):
            if m.added_snapshot_id != snap.snapshot_id:
                continue
            for e in self._manifest(m, True):
                if e.snapshot_id == snap.snapshot_id and int(e.data_file.content.value) == DATA \
                        and int(e.status.value) == 1:
                    return int(e.sequence_number)
        return None

    def removed_data_files(self, snapshot_id: int) -> List[RemovedFile]:
        """The data files the snapshot removed: every deleted entry of the manifests it added, as
        Iceberg's Java API (the Spark engine's FileListing) reads them, whatever snapshot id the
        entry carries (pyiceberg up to 0.11 wrote the adding snapshot's: apache/iceberg-python#3236)."""
        snap = self.table.metadata.snapshot_by_id(int(snapshot_id))
        if snap is None:
            return []
        out = []
        for m in snap.manifests(self.table.io):
            if m.added_snapshot_id != snap.snapshot_id:
                continue
            for e in self._manifest(m, False):
                if int(e.status.value) == 2 and int(e.data_file.content.value) == DATA:
                    out.append(RemovedFile(e.data_file.file_path, int(e.sequence_number)))
        return out

    # --- rows ---------------------------------------------------------------------------
    def equality_keys(self, files: Iterable[Entry]) -> Set[str]:
        """The keys equality-delete files delete."""
        import pyarrow.parquet as pq

        out: Set[str] = set()
        for f in files:
            path = f.live.path
            if path not in self._eq_keys:
                with self.table.io.new_input(path).open() as stream:
                    column = pq.read_table(stream, columns=[KEY]).column(KEY)
                self._eq_keys[path] = {k for k in column.to_pylist() if k is not None}
            out |= self._eq_keys[path]
        return out

    def rows(self, data: Sequence[Entry], at: Sequence[Entry], equality: bool = True,
             positional: bool = True, schema: Any = None) -> ArrowTable:
        """The rows the data files show given the delete files `at` (a snapshot's live files), in
        `schema` (pyiceberg's; the table's current one by default): position deletes and deletion
        vectors as of the data file's sequence number or newer, equality deletes newer than it in its
        partition (or global)."""
        import pyarrow as pa
        from pyiceberg.expressions import AlwaysTrue
        from pyiceberg.io.pyarrow import ArrowScan, schema_to_pyarrow

        schema = schema if schema is not None else self.table.metadata.schema()
        eq = [d for d in at if d.live.content == EQUALITY_DELETES] if equality else []
        by_path = {d.live.path: d for d in eq}
        parts = []
        for newer, tasks in self._tasks(data, at, eq, positional).items():
            table = ArrowScan(self.table.metadata, self.table.io, schema, AlwaysTrue()).to_table(tasks)
            parts.append(without_keys(table, sorted(self.equality_keys(by_path[p] for p in newer))))
        # pyiceberg types a column no file of a scan holds as its own default (large_string), or
        # leaves it out of a scan without rows: every part in one Arrow schema before they are joined.
        target = schema_to_pyarrow(schema)
        parts = [p if p.schema.equals(target, check_metadata=False) else aligned(p, target) for p in parts]
        return pa.concat_tables(parts) if parts else target.empty_table()

    def _tasks(self, data: Sequence[Entry], at: Sequence[Entry], eq: Sequence[Entry],
               positional: bool) -> Dict[Tuple[str, ...], List[Any]]:
        """Scan tasks (each data file with the position deletes that reach it) grouped by the
        equality-delete files that apply to them: one scan per group (pyiceberg reads a scan's
        tasks in parallel and returns them in order)."""
        from pyiceberg.table import FileScanTask

        pos = [d for d in at if d.live.content == POSITION_DELETES] if positional else []
        specs = self.table.metadata.specs()
        groups: Dict[Tuple[str, ...], List[Any]] = {}
        for f in data:
            mine = {d.data_file for d in pos if d.live.seq >= f.live.seq and d.live.may_point_at(f.live.path)}
            newer = tuple(sorted(d.live.path for d in eq if d.live.seq > f.live.seq and (
                specs[d.spec_id].is_unpartitioned() or (d.spec_id, d.partition) == (f.spec_id, f.partition))))
            groups.setdefault(newer, []).append(FileScanTask(f.data_file, mine))
        return groups
