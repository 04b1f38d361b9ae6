"""The copy-on-write merge on pyiceberg: the mirror files whose key bounds can hold a changed key
(core/pruning.py) are read, their rows less the changed keys and the upserts are written as new
files, and one `overwrite` snapshot replaces them. The commit carries the checkpoint marker in its
summary and the checkpoint properties (checkpoint.py), is audited (audit.py) before the catalog
sees it, and is one catalog commit: either engine can take over from it."""
import os
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from ..core.audit import ChangeCounts, audit, count_published, live_rows, replaced_rows
from ..core.checkpoint import REJECTED_PROPERTY, Marker, published_properties, with_rejected
from ..core.errors import AuditError
from ..core.files import DATA
from ..core.filesize import mirror_target_bytes, rebuild_partitions
from ..core.identity import DELETE_MODE_PROPERTY
from ..core.modes import DeleteMode, MirrorFormat
from ..core.pruning import FileBounds, merge_shape, touched_files
from ..core.resolution import KEY
from ..core.snapshots import Snapshot, Summary, TableState
from ..core.steps import Merge
from ..core.summary import TableResult
from .evolve import follow_source
from .manifests import Manifests, aligned, on_cores, state_of, without_keys
from .reader import HandOver
from .resolve import ArrowChangeSet

# pyarrow keeps a column dictionary-encoded until its dictionary outgrows this (pyiceberg's default
# is Iceberg's 2 MB); Java's Parquet writer drops a dictionary that does not pay after one page.
# OLake's keys and most text columns are unique: at 256 KB they fall back to plain encoding early,
# files are 5-9% smaller and written about 20% faster (docs/BENCHMARKS.md), and a column of few values
# keeps its dictionary. A mirror that sets the property keeps its value.
DICT_SIZE = "write.parquet.dict-size-bytes"
DICT_SIZE_BYTES = 256 * 1024
BY_KEY = [(KEY, "ascending")]


def merge_cow(mirror: Any, state: TableState, cs: ArrowChangeSet, step: Merge, delete_mode: DeleteMode,
              result: TableResult, source: Any) -> List[str]:
    """Merge the change set into the cow mirror (pyiceberg table `mirror`, at `state`) and publish it
    with the step's target as its checkpoint and its properties, in one commit, with the columns
    the mirror must follow of pyiceberg table `source` (evolve.py). Returns what of its schema
    changed."""
    counts, marker, recorded = cs.counts, step.target, dict(step.properties)
    tx = once(mirror)
    followed = follow_source(tx, source)
    touched, parts = _rewrite(mirror, tx.table_metadata, state, cs)
    if not touched and not parts:
        # Deletes of keys the mirror does not hold change no rows: a snapshot of no file carries the
        # checkpoint, as the Spark engine's (core/checkpoint.py find_checkpoint).
        with tx.update_snapshot(snapshot_properties={Summary.WAP_ID: marker.wap_id}).fast_append():
            pass
        made = _staged(tx, state.current_id, result.mirror)
        _set_published(tx, marker.wap_id, made, delete_mode, recorded)
        tx.commit_transaction()
        result.rows_deleted += counts.deletes
        return followed
    parent = state.snapshot(state.current_id)
    parent_rows = live_rows(parent) if parent is not None else 0
    _overwrite(tx, mirror, touched, parts, marker)
    staged = _staged(tx, state.current_id, result.mirror)
    _set_published(tx, marker.wap_id, staged, delete_mode, recorded)
    audit(staged, parent_rows, counts, False, result.mirror, MirrorFormat.COW)  # before the catalog sees it
    tx.commit_transaction()
    result.rows_upserted += counts.upserts
    result.rows_deleted += counts.deletes
    result.rows_replaced += replaced_rows(staged, counts, MirrorFormat.COW)
    result.files_written += staged.summary_int(Summary.ADDED_DATA_FILES)
    result.bytes_written += staged.summary_int(Summary.ADDED_FILES_SIZE)
    result.files_rewritten += len(touched)
    result.files_read += len(touched)
    result.bytes_read += sum(e.live.size for e in touched)
    return followed


def build_cow(mirror: Any, cs: ArrowChangeSet, step: Merge, delete_mode: DeleteMode, result: TableResult,
              source_bytes: int, source: Any, replaced: Sequence[Any] = ()) -> List[str]:
    """A first build or a rebuild: every row of the change set (a whole source snapshot of
    `source_bytes`) written into the cow mirror, sorted by key, in place of its `replaced` files
    (every data file a mirror that holds rows has), with the checkpoint and its properties, audited
    as a rebuild (its rows are exactly those written), in one commit, with the columns of pyiceberg
    table `source` the mirror must follow (an empty mirror a killed run left may be older than
    them). An unpartitioned mirror is written in the key ranges a Spark rebuild writes
    (core/filesize.py), so a later merge of nearby keys rewrites a small part of it. Returns what of
    its schema changed."""
    from pyiceberg.io.pyarrow import schema_to_pyarrow

    marker = step.target
    tx = once(mirror)
    followed = follow_source(tx, source)
    meta = tx.table_metadata
    rows = aligned(cs.upserts, schema_to_pyarrow(meta.schema()))
    if meta.spec().is_unpartitioned():
        rows = rows.sort_by(BY_KEY)
        ranges = rebuild_partitions(source_bytes, mirror_target_bytes(meta.properties), os.cpu_count() or 1)
        size = max(1, -(-rows.num_rows // max(1, ranges)))
        parts = [rows.slice(at, size) for at in range(0, rows.num_rows, size)]
    else:
        parts = _per_partition(meta, rows)
    _overwrite(tx, mirror, list(replaced), parts, marker)
    staged = _staged(tx, mirror.metadata.current_snapshot_id, result.mirror)
    _set_published(tx, marker.wap_id, staged, delete_mode, dict(step.properties))
    audit(staged, 0, cs.counts, True, result.mirror, MirrorFormat.COW)  # before the catalog sees it
    tx.commit_transaction()
    result.rows_upserted += staged.summary_int(Summary.ADDED_RECORDS)
    result.files_written += staged.summary_int(Summary.ADDED_DATA_FILES)
    result.bytes_written += staged.summary_int(Summary.ADDED_FILES_SIZE)
    return followed


def publish_staged(mirror: Any, state: TableState, staged_id: int, step: Merge, counts: ChangeCounts,
                   delete_mode: DeleteMode, result: TableResult) -> int:
    """Publish snapshot `staged_id`, a write an earlier run staged on the mirror's current snapshot
    (pyiceberg table `mirror`, at `state`), as the Spark engine publishes one: audited against
    `counts` (a rebuild against its own commit), then made current with the checkpoint and the
    merge's properties in one commit that fails if the mirror moved meanwhile. One the audit
    refuses is recorded as rejected, so no later run tries it again. Returns the rows upserted."""
    staged = state.snapshot(staged_id)
    if staged is None:
        raise AuditError(f"{result.mirror}: staged snapshot {staged_id} is not in the mirror's metadata")
    parent = state.snapshot(state.current_id)
    try:
        audit(staged, live_rows(parent) if parent is not None else 0, counts, step.rebuild, result.mirror,
              MirrorFormat.COW)
    except AuditError:
        with mirror.transaction() as tx:
            tx.set_properties({REJECTED_PROPERTY: with_rejected(state, staged.snapshot_id)})
        raise
    from pyiceberg.table.update.snapshot import ManageSnapshots

    tx = once(mirror)
    ManageSnapshots(tx).set_current_snapshot(staged.snapshot_id)  # staged with: main is still `state`'s
    _set_published(tx, step.target.wap_id, staged, delete_mode, dict(step.properties))
    tx.commit_transaction()
    return count_published(result, staged, counts, step.rebuild, MirrorFormat.COW)


def _set_published(tx: Any, wap_id: str, staged: Snapshot, delete_mode: DeleteMode,
                   recorded: Mapping[str, str]) -> None:
    """Set what every publish sets (core published_properties) in transaction `tx`, which makes
    `staged` current, with the delete mode and the step's `recorded` properties."""
    tx.set_properties({**published_properties(wap_id, staged.snapshot_id, staged.summary,
                                              tx.table_metadata.format_version),
                       DELETE_MODE_PROPERTY: str(delete_mode), **recorded})


def once(mirror: Any) -> Any:
    """A transaction on pyiceberg table `mirror` that commits at most once: pyiceberg retries a commit
    that lost a race by rebuilding its snapshot on the newer one (an append validates nothing), but
    the job's write was audited against the snapshot it read. A mirror that moved fails the commit
    (CommitFailedException) and the run plans again (table_run.py). The setting lives in memory only."""
    from pyiceberg.table import Table, TableProperties

    meta = mirror.metadata
    held = meta.model_copy(update={"properties": {**meta.properties, TableProperties.COMMIT_NUM_RETRIES: "0"}})
    return Table(mirror.name(), held, mirror.metadata_location, mirror.io, mirror.catalog).transaction()


def replaced_files(mirror: Any, state: TableState) -> List[Any]:
    """The data files a rebuild of the mirror (pyiceberg table `mirror`, at `state`) drops: every
    live one. A mirror holding delete files, which a cow mirror never does, is the Spark engine's to
    rebuild (HandOver)."""
    live = Manifests(mirror, state.key_field_id).live(state.current_id) if state.current_id else []
    if any(e.live.content != DATA for e in live):
        raise HandOver("the mirror holds delete files someone else committed: the Spark engine rebuilds it")
    return live


def _rewrite(mirror: Any, meta: Any, state: TableState, cs: ArrowChangeSet) -> Tuple[List[Any], List[Any]]:
    """(the mirror files the change keys can reach, the tables replacing them, each written apart:
    their rows less the changed keys, and the upserts), in the columns of the metadata `meta` the
    transaction commits (by field id, so a renamed column keeps its values). A partitioned mirror's
    files are rewritten a partition a table, with that partition's upserts, read and filtered in
    parallel: pyiceberg splits what it writes by partition with a filter of the whole table per
    partition found (16 passes over a 1M-row bucket(16) rewrite, about 0.5 s); a table of one
    partition costs it one. Which partition a row is written to is still pyiceberg's to work out
    from the row, so a file of an older spec, or upserts no touched file's partition matches, are
    written right, only in files of their own."""
    import pyarrow as pa
    from pyiceberg.io.pyarrow import schema_to_pyarrow

    schema = meta.schema()
    keys = sorted(set(cs.keys))
    files = Manifests(mirror, state.key_field_id)
    data = [e for e in files.live(state.current_id) if e.live.content == DATA] if state.current_id else []
    bounds = [FileBounds(e.live.path, e.live.lo, e.live.hi, e.live.size) for e in data]
    touched_paths = {f.path for f in touched_files(bounds, keys)}
    touched = sorted((e for e in data if e.live.path in touched_paths), key=lambda e: e.live.lo or "")
    target = schema_to_pyarrow(schema)
    upserts = aligned(cs.upserts, target).sort_by(BY_KEY)
    spread = merge_shape(bounds, keys).spread
    groups = _by_partition(meta, touched, upserts)

    def part(group: Tuple[List[Any], Any]) -> Any:
        entries, ups = group
        kept = without_keys(files.rows(entries, [], schema=schema), keys) if entries else target.empty_table()
        rows = pa.concat_tables([aligned(kept, target), ups])
        # Few files rewritten: sorted whole, so each file keeps a narrow key range. A spread change
        # rewrites most of the mirror: its files' rows stay in their order (each was sorted) and
        # the upserts follow sorted (as the Spark engine's spread merge, without a global sort).
        return rows.sort_by(BY_KEY) if rows.num_rows and not spread else rows

    return touched, [t for t in on_cores(part, groups) if t.num_rows]


def _by_partition(meta: Any, touched: List[Any], upserts: Any) -> List[Tuple[List[Any], Any]]:
    """[(touched files, the upserts written with their rows)]: one group on an unpartitioned mirror;
    else a group per partition of the files (those of the current spec with the upserts of their
    partition), and the upserts of no such partition last."""
    spec = meta.spec()
    if spec.is_unpartitioned():
        return [(touched, upserts)]
    from pyiceberg.io.pyarrow import _determine_partitions

    ups: Dict[Tuple[Any, ...], Any] = {tuple(p.partition_key.partition): p.arrow_table_partition  # type: ignore[arg-type]
           for p in (_determine_partitions(spec, meta.schema(), upserts) if upserts.num_rows else ())}
    by_file: Dict[Tuple[Any, ...], List[Any]] = {}
    for e in touched:
        by_file.setdefault((e.spec_id, e.partition), []).append(e)
    none = upserts.slice(0, 0)
    groups = []
    for (spec_id, part), entries in by_file.items():
        groups.append((entries, ups.pop(part, none) if spec_id == spec.spec_id else none))
    if ups:
        import pyarrow as pa

        groups.append(([], pa.concat_tables(list(ups.values())).sort_by(BY_KEY)))
    return groups


def _per_partition(meta: Any, rows: Any) -> List[Any]:
    """`rows` sorted by partition of the metadata `meta`'s spec, then by key, as a slice per partition:
    one sort, where pyiceberg's write would filter the whole table once per partition it finds (16
    passes over a 1M-row bucket(16) build). pyiceberg still works out each written row's partition
    (this only splits the work)."""
    import pyarrow as pa
    import pyarrow.compute as pc
    from pyiceberg.io.pyarrow import _get_field_from_arrow_table

    spec, schema = meta.spec(), meta.schema()
    names = [f"_p{i}" for i in range(len(spec.fields))]
    columns = [f.transform.pyarrow_transform(schema.find_field(f.source_id).field_type)(
        _get_field_from_arrow_table(rows, schema.find_column_name(f.source_id))) for f in spec.fields]
    keyed = pa.Table.from_arrays([*columns, rows.column(KEY)], names=[*names, KEY])
    try:
        order = pc.sort_indices(keyed, sort_keys=[(n, "ascending") for n in names] + BY_KEY)
    except (pa.ArrowNotImplementedError, pa.ArrowTypeError):  # a type Arrow cannot sort (an identity uuid)
        return [rows.sort_by(BY_KEY)]  # pyiceberg's write splits it, as before
    # Each partition's rows are one run of the sorted table (nulls last, as a run of their own);
    # grouping in order of appearance gives the runs' lengths. A run that held two partitions would
    # only make pyiceberg split it again.
    runs = keyed.select(names).take(order).group_by(names, use_threads=False).aggregate([([], "count_all")])
    ordered, at, parts = rows.take(order), 0, []
    for n in runs.column("count_all").to_pylist():
        parts.append(ordered.slice(at, n))
        at += n
    return parts


def _write_metadata(meta: Any) -> Any:
    """The mirror's metadata as its files are written: DICT_SIZE_BYTES unless it sets DICT_SIZE (only
    the files' encoding differs; nothing of it is committed)."""
    if DICT_SIZE in meta.properties:
        return meta
    return meta.model_copy(update={"properties": {**meta.properties, DICT_SIZE: str(DICT_SIZE_BYTES)}})


def _overwrite(tx: Any, mirror: Any, touched: List[Any], parts: Sequence[Any], marker: Marker) -> None:
    """One snapshot in the transaction: `touched` files out, the rows of `parts` in (each table
    written apart, up to a table per core at once), the marker in its summary."""
    from pyiceberg.io.pyarrow import _dataframe_to_data_files

    meta = _write_metadata(tx.table_metadata)
    new_files = [f for files in on_cores(lambda t: list(_dataframe_to_data_files(meta, t, mirror.io)), parts)
                 for f in files]
    summary = {Summary.WAP_ID: marker.wap_id}
    if not touched:
        with tx.update_snapshot(snapshot_properties=summary).fast_append() as app:
            for f in new_files:
                app.append_data_file(f)
        return
    with tx.update_snapshot(snapshot_properties=summary).overwrite() as ow:
        for e in touched:
            ow.delete_data_file(e.data_file)
        for f in new_files:
            ow.append_data_file(f)


def _staged(tx: Any, parent_id: Optional[int], table: str) -> Any:
    """The transaction's new snapshot, as the core's record (from the metadata it would commit); a
    write that made none is refused, so the checkpoint never moves past a change set unwritten."""
    meta = state_of(tx.table_metadata)
    snap = meta.snapshot(meta.current_id)
    if snap is None or snap.snapshot_id == parent_id:
        raise AuditError(f"{table}: the merge staged no snapshot; nothing was published")
    return snap

