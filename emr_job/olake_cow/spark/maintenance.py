"""Table maintenance after a run's merges, through Iceberg's Spark procedures: snapshot expiry
(with the clamps of core/maintenance.py), manifest rewrite, small-file compaction, folding of
deletion vectors and orphan-file removal."""
import time
from dataclasses import asdict, dataclass, replace
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional, Tuple

from ..core.audit import forbidden_deletes
from ..core.errors import OlakeCowError
from ..core.formats import FORMATS
from ..core.identifiers import qualified, quote, sql_string
from ..core.identity import foreign_metadata, foreign_metadata_problem, is_table_metadata
from ..core.maintenance import (
    EXPIRY_SKIPPED_PROPERTY,
    HOUR_MS,
    MaintenanceOptions,
    MaintenanceResult,
    compaction_file_bytes,
    left_by_maintenance,
    mirror_cutoff,
    mirror_expiry_problem,
    source_cutoff,
    timestamp_literal,
)
from ..core.mirror_props import rewrite_properties
from ..core.modes import MirrorFormat
from ..core.snapshots import TableState
from .catalog import IcebergCatalog
from .folders import all_files, ground, ground_problem_of, lists_by_prefix

if TYPE_CHECKING:
    from ..core.changesource import ChangeSource


class Maintainer:
    """Runs the procedures on one table pair (Spark adapter)."""

    def __init__(self, session: Any, catalog: str, tables: IcebergCatalog) -> None:
        self.session, self.catalog, self.tables = session, catalog, tables

    def _call(self, proc: str, args: Dict[str, str]) -> List[Dict[str, Any]]:
        text = ", ".join(f"{k} => {v}" for k, v in args.items())
        rows = self.session.sql(f"CALL {quote(self.catalog)}.system.{proc}({text})").collect()
        return [r.asDict() for r in rows]

    def _table_arg(self, ns: str, table: str) -> str:
        """The `table` argument of a procedure: a string literal, relative to the catalog."""
        return sql_string(f"{quote(ns)}.{quote(table)}")

    def expire(self, ns: str, table: str, older_than_ms: int, out: MaintenanceResult,
               other: Optional[Tuple[str, str]]) -> bool:
        """Expire the table's snapshots older than `older_than_ms` (the current one is kept), which
        deletes every file only they reference, wherever it lies: skipped, with a note, while its
        ground is not its own (core/identity.py ground_problem; `other`: the other table of its
        pair, if it exists). Returns whether it expired."""
        ident = qualified(self.catalog, ns, table)
        before_files = all_files(self.tables, ns, table)
        problem = ground_problem_of(self.tables, ground(self.tables, ns, table, before_files), "expiring its snapshots",
                                    other)
        if problem:
            out.notes.append(problem)
            return False
        before = self.session.sql(f"SELECT count(*) FROM {ident}.snapshots").collect()[0][0]
        self._call("expire_snapshots", {"table": self._table_arg(ns, table),
                                        "older_than": timestamp_literal(older_than_ms),
                                        "retain_last": "1"})
        after = self.session.sql(f"SELECT count(*) FROM {ident}.snapshots").collect()[0][0]
        after_files = all_files(self.tables, ns, table)
        gone = set(before_files) - set(after_files)
        out.snapshots_expired += int(before) - int(after)
        out.files_removed += len(gone)
        out.bytes_removed += sum(before_files[f] for f in gone)
        return True

    def rewrite_manifests(self, ns: str, table: str, out: MaintenanceResult) -> None:
        rows = self._call("rewrite_manifests", {"table": self._table_arg(ns, table)})
        out.manifests_rewritten += sum(int(r.get("rewritten_manifests_count") or 0) for r in rows)

    def compact(self, ns: str, table: str, fold_ratio: float, file_bytes: int, out: MaintenanceResult) -> None:
        # The mirror always has a sort order (the source's, else _olake_id): sort within partitions,
        # into files of `file_bytes` (core/maintenance.py compaction_file_bytes).
        # Files whose deletion vectors delete at least fold_ratio of their rows are rewritten too.
        rows = self._call("rewrite_data_files", {
            "table": self._table_arg(ns, table), "strategy": "'sort'",
            "options": f"map('min-input-files', '2', 'delete-ratio-threshold', '{fold_ratio:g}', "
                       f"'target-file-size-bytes', '{int(file_bytes)}')"})
        out.files_compacted += sum(int(r.get("rewritten_data_files_count") or 0) for r in rows)

    def fold(self, ns: str, table: str, ratio: float, out: MaintenanceResult) -> None:
        """Rewrite only the data files whose deletion vectors delete at least `ratio` of their rows
        (sizes do not select files here); their deletion vectors go with them."""
        options = {"delete-ratio-threshold": f"{ratio:g}", "delete-file-threshold": str(2**31 - 1),
                   "min-file-size-bytes": "0", "max-file-size-bytes": str(2**62), "min-input-files": "1"}
        text = ", ".join(f"{sql_string(k)}, {sql_string(v)}" for k, v in options.items())
        rows = self._call("rewrite_data_files", {"table": self._table_arg(ns, table), "strategy": "'binpack'",
                                                 "options": f"map({text})"})
        out.files_folded += sum(int(r.get("rewritten_data_files_count") or 0) for r in rows)

    def orphans(self, ns: str, table: str, older_than_ms: int, dry_run: bool, out: MaintenanceResult,
                other: Optional[Tuple[str, str]]) -> None:
        """Remove the files in the table's folders that no snapshot references, older than
        `older_than_ms`: skipped, with a note, while its ground is not its own (a folder moved onto
        `other`'s, the other table of its pair, would lose that table's files)."""
        t = self.tables.load(ns, table)
        mine = ground(self.tables, ns, table, loaded=t)
        problem = ground_problem_of(self.tables, mine, "removing its orphan files", other)
        if problem:
            out.notes.append(problem)
            return
        io = t.io()
        args = {"table": self._table_arg(ns, table), "older_than": timestamp_literal(older_than_ms), "dry_run": "true"}
        if lists_by_prefix(self.tables, io):
            # List through the table's FileIO (S3FileIO, S3 Tables, vended credentials), not Hadoop.
            args["prefix_listing"] = "true"
        # Only the folders Iceberg writes the table's files to: anything else under its location
        # (a file someone keeps beside it) is not the table's to remove, however old. Listed first,
        # all of them, and deleted only once no listed file shows another table's.
        listed: List[str] = []
        for folder in mine.folders:
            rows = self._call("remove_orphan_files", {**args, "location": sql_string(folder)})
            listed += [str(r.get("orphan_file_location")) for r in rows]
        found = ((p, self._metadata_uuid(io, p)) for p in listed if is_table_metadata(p))
        foreign = foreign_metadata(str(t.uuid()), found)
        if foreign:
            out.notes.append(foreign_metadata_problem(mine.name, *foreign))
            return
        out.orphan_files += listed
        if not dry_run:
            for path in listed:  # exactly the files checked above
                io.deleteFile(path)

    def _metadata_uuid(self, io: Any, path: str) -> Optional[str]:
        """The UUID of the table a metadata file describes; None when it cannot be read as one."""
        try:
            return str(self.tables.iceberg.TableMetadataParser.read(io, path).uuid())
        except Exception:  # noqa: BLE001 - unreadable: not proven the table's own
            return None


@dataclass(frozen=True)
class TablePair:
    """A source table and its mirror, by namespace and name."""

    source_ns: str
    source: str
    mirror_ns: str
    mirror: str


def maintain(session: Any, catalog: IcebergCatalog, pair: TablePair, m: MaintenanceOptions,
             changes: "ChangeSource", fmt: MirrorFormat, source: TableState, mirror: TableState,
             say: Callable[..., None]) -> Dict[str, Any]:
    """Maintain one source/mirror pair after its merges; returns the summary's `maintenance` part."""
    out, worker = MaintenanceResult(), Maintainer(session, catalog.catalog_name, catalog)
    # Each table's ground is checked against the other's before anything deletes its files.
    mirror_pair = (pair.mirror_ns, pair.mirror) if mirror.exists else None
    source_pair = (pair.source_ns, pair.source) if source.exists else None
    now_ms = int(time.time() * 1000)
    if m.expire_source_hours is not None:
        cutoff, note = source_cutoff(now_ms, m.expire_source_hours, changes.expiry_floor(source, mirror))
        if note:
            out.notes.append(note)
            say("%s", note)
        if cutoff is not None:
            worker.expire(pair.source_ns, pair.source, cutoff, out, mirror_pair)
    if mirror.exists:
        expiry_problem = mirror_expiry_problem(source, mirror) if m.expire_mirror_hours is not None else None
        if expiry_problem:
            out.notes.append(expiry_problem)
            say("%s", expiry_problem)
        _maintain_mirror(worker, catalog, pair, replace(m, expire_mirror_hours=None) if expiry_problem else m, fmt,
                         out, source_pair)
    if m.remove_orphans_hours is not None:
        older = now_ms - int(m.remove_orphans_hours * HOUR_MS)
        if changes.writes_source:  # a readonly mirror never deletes files of OLake's table
            worker.orphans(pair.source_ns, pair.source, older, m.orphans_dry_run, out, mirror_pair)
        if mirror.exists:
            worker.orphans(pair.mirror_ns, pair.mirror, older, m.orphans_dry_run, out, source_pair)
    say("maintenance: %d snapshot(s) expired, %d file(s) / %d bytes removed, %d manifest(s) rewritten, "
        "%d file(s) compacted, %d folded, %d orphan file(s)%s", out.snapshots_expired, out.files_removed,
        out.bytes_removed, out.manifests_rewritten, out.files_compacted, out.files_folded, len(out.orphan_files),
        " (dry run: listed, not removed)" if m.orphans_dry_run else "")
    return asdict(out)


def _record_left(catalog: IcebergCatalog, ns: str, name: str, state: TableState, done: List[str]) -> None:
    """Record what the maintenance `done` left in `state` (core/maintenance.py left_by_maintenance),
    so that the due rules wait for more: a mirror it cannot improve would otherwise start a run
    for nothing at every schedule."""
    changed = {k: v for k, v in left_by_maintenance(state, done).items() if state.properties.get(k) != v}
    if changed:
        catalog.set_properties(ns, name, changed)


def _record_skipped_expiry(catalog: IcebergCatalog, ns: str, name: str) -> None:
    """Record the snapshot at which the mirror's expiry was skipped (EXPIRY_SKIPPED_PROPERTY), so
    the trigger starts no run for it at every schedule while the mirror stays as it is."""
    state = catalog.state(ns, name)
    if state.properties.get(EXPIRY_SKIPPED_PROPERTY) != str(state.current_id):
        catalog.set_properties(ns, name, {EXPIRY_SKIPPED_PROPERTY: str(state.current_id)})


def _maintain_mirror(worker: Maintainer, catalog: IcebergCatalog, pair: TablePair, m: MaintenanceOptions,
                     fmt: MirrorFormat, out: MaintenanceResult, source: Optional[Tuple[str, str]]) -> None:
    ns, name = pair.mirror_ns, pair.mirror
    done: List[str] = []
    state = catalog.state(ns, name)
    held = _forbidden(state, fmt)  # someone's (a DELETE after merge-on-read was set)
    folds = m.fold_deletes and FORMATS[fmt].folds_deletes
    if m.compact_files or folds:
        reset = rewrite_properties(state, pair.source)  # as before a merge
        if reset:
            catalog.set_properties(ns, name, reset)  # not the file size compaction reads from `state`
    if m.compact_files:
        worker.compact(ns, name, m.ratio, compaction_file_bytes(state), out)
        done.append("compact_files")
    if folds:
        worker.fold(ns, name, m.ratio, out)
        done.append("fold_deletes")
    if m.rewrite_manifests:
        worker.rewrite_manifests(ns, name, out)
        done.append("rewrite_manifests")
    if m.expire_mirror_hours is not None:
        # From now, not the run's start: with a retention shorter than the run, the snapshots of
        # this run's compaction and rewrite are older than asked too (the current one is kept).
        if not worker.expire(ns, name, mirror_cutoff(int(time.time() * 1000), m.expire_mirror_hours), out,
                             source):
            _record_skipped_expiry(catalog, ns, name)
    after = catalog.state(ns, name)  # expiry keeps the current snapshot, whose totals are recorded
    if done:
        _record_left(catalog, ns, name, after, done)
    left = _forbidden(after, fmt)
    if left and not held:  # the ones someone committed are their change, which the next merge refuses
        raise OlakeCowError(f"{ns}.{name}: maintenance left delete files the mirror must not hold "
                            f"({', '.join(left)})")


def _forbidden(state: TableState, fmt: MirrorFormat) -> List[str]:
    snap = state.snapshot(state.current_id)
    return forbidden_deletes(snap, fmt) if snap is not None else []
