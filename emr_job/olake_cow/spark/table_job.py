"""Brings one mirror up to date with its source table: the plan -> act loop.

Per table: read both tables' metadata, ask the change source (changesource.py) for the next step,
carry it out, repeat. The rooms it uses: mirror_table.py (create and evolve the mirror),
boundary_reader.py and history_reader.py (read a change set), merge.py (write, audit, publish),
maintenance.py, verify.py.
"""
import logging
import time
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Any, Dict, Iterator, Optional, Tuple, Type

from ..core import steps
from ..core.audit import ChangeCounts, live_rows
from ..core.changesource import ChangeSource, for_mode
from ..core.checkpoint import Marker, find_checkpoint
from ..core.config import DestinationConfig
from ..core.errors import (
    ForeignMirrorError,
    HistoryError,
    NotOlakeTableError,
    OlakeCowError,
    SourceModeError,
    TableNotFoundError,
)
from ..core.filesize import mirror_target_bytes
from ..core.identifiers import MIRROR_SUFFIX, qualified
from ..core.identity import delete_mode_change, foreign_change, ownership, source_problem
from ..core.modes import DEFAULT_MIRROR_FORMAT, MirrorFormat, SourceMode, resolve_format, resolve_mode
from ..core.options import JobOptions
from ..core.pruning import MergeShape
from ..core.snapshots import Snapshot, Summary, TableState
from ..core.summary import TableResult, TableStatus
from . import boundary
from .boundary_reader import BoundaryReader
from .catalog import IcebergCatalog
from .change_set import ChangeSet, SnapshotReader, SourceTable
from .history_reader import HistoryReader
from .maintenance import TablePair, maintain
from .merge import ChangeSummary, MirrorWriter
from .mirror_table import MirrorTable
from .session import table_session

log = logging.getLogger("olake_cow")
MAX_STEPS = 10_000
READERS: Dict[SourceMode, Type[SnapshotReader]] = {SourceMode.TRUNCATE: BoundaryReader,
                                                   SourceMode.READONLY: HistoryReader}


def _live_rows(mirror: TableState) -> int:
    parent = mirror.snapshot(mirror.current_id)
    return live_rows(parent) if parent else 0


class _Clock:
    def __init__(self, result: TableResult, phase: str) -> None:
        self.result, self.phase = result, phase

    def __enter__(self) -> "_Clock":
        self.t0 = time.monotonic()
        return self

    def __exit__(self, *exc: object) -> None:
        self.result.add_time(self.phase, time.monotonic() - self.t0)


@dataclass(frozen=True)
class _Own:
    """What a table opens for itself when it has work: its session, catalog and writer."""
    session: Any
    catalog: IcebergCatalog
    writer: MirrorWriter


class TableJob:
    """Brings one mirror up to date with its source table. The constructor only names things; the
    job's own Spark session (and the catalog bound to it) is opened on first use: a table whose
    metadata says there is nothing to do never opens one. Metadata is read through the run's
    catalog (`shared`), which needs no session of the table's."""

    def __init__(self, root_session: Any, shared: IcebergCatalog, cfg: DestinationConfig, opts: JobOptions,
                 table: str) -> None:
        self.cfg, self.opts, self.table = cfg, opts, table
        self._root, self._shared = root_session, shared
        self._own: Optional[_Own] = None
        self.mirror = f"{table}{MIRROR_SUFFIX}"
        self.source_q = qualified(cfg.catalog_name, opts.source_namespace, table)
        self.mirror_q = qualified(cfg.catalog_name, opts.cow_namespace, self.mirror)
        self.result = TableResult(table=table, mirror=f"{opts.cow_namespace}.{self.mirror}")
        self.fmt = opts.mirror_format or DEFAULT_MIRROR_FORMAT

    def _opened(self) -> "_Own":
        if self._own is None:
            session = table_session(self._root, self.cfg)
            catalog = self._shared.for_session(session)
            self._own = _Own(session, catalog, MirrorWriter(session, catalog, self.opts.cow_namespace, self.mirror,
                                                            self.mirror_q, self.result, self.opts.delete_mode))
        return self._own

    @property
    def session(self) -> Any:
        """The table's own Spark session (own SQL conf, temp views, WAP id)."""
        return self._opened().session

    @property
    def catalog(self) -> IcebergCatalog:
        """The run's catalog bound to the table's session: for commits and SQL."""
        return self._opened().catalog

    @property
    def writer(self) -> MirrorWriter:
        return self._opened().writer

    def say(self, msg: str, *args: object) -> None:
        log.info("[%s] " + msg, self.table, *args)

    def _mirror_state(self) -> TableState:
        return self._shared.state(self.opts.cow_namespace, self.mirror)

    def states(self) -> Tuple[TableState, TableState]:
        with _Clock(self.result, "planning"):
            return self._shared.state(self.opts.source_namespace, self.table), self._mirror_state()

    def run(self) -> TableResult:
        started = time.monotonic()
        try:
            source, mirror = self.states()
            if not source.exists:
                raise TableNotFoundError(f"source table {self.opts.source_namespace}.{self.table} does not exist")
            if self._skipped(source, mirror):  # checked before anything is read or committed
                return self.result
            mode = resolve_mode(source, mirror, self.opts.source_mode, self.result.mirror)
            if self.opts.verify and mode != SourceMode.READONLY:  # refused before anything is committed
                raise SourceModeError(f"{self.table}: --verify needs a readonly mirror: in truncate mode OLake's "
                                      "table no longer holds the rows the mirror is compared with")
            self.fmt, upgrade = resolve_format(mirror, self.opts.mirror_format, self.opts.upgrade_mirror,
                                               self.result.mirror)
            self.result.source_mode, self.result.mirror_format = mode.value, self.fmt.value
            changes = for_mode(mode)
            if upgrade and not self.opts.dry_run:
                self._mirror_table(mode).upgrade_to_dv()
                self.result.notes.append("upgraded the mirror in place to format version 3 (dv)")
                mirror = self._mirror_state()
            if self.opts.maintenance.only and not self.opts.dry_run:
                self.result.status = TableStatus.MAINTAINED
            else:
                repair = foreign_change(mirror) or self._delete_mode_rebuild(mirror)
                self._loop(changes, source, mirror)
                if repair and self.result.merges and not self.opts.dry_run:
                    self.result.repaired = 1
                    self.result.notes.append(f"rebuilt the mirror: {repair}")
            if self.opts.maintenance.requested and not self.opts.dry_run:
                self._maintain(changes)  # only reached when the merges succeeded
            if self.opts.verify and not self.opts.dry_run:
                self._verify(mode)
        finally:
            self.result.duration_s = round(time.monotonic() - started, 3)
        return self.result

    def _loop(self, changes: ChangeSource, source: TableState, mirror: TableState) -> None:
        target = source.current_id  # the run stops here: later commits are the next run's
        self.result.target = target if changes.mode == SourceMode.READONLY else None
        for _ in range(MAX_STEPS):
            rebuild = self._delete_mode_rebuild(mirror)
            step = changes.plan(source, mirror, target, may_close=self.result.truncated == 0, rebuild=rebuild)
            if self.opts.dry_run:
                self.result.plan = changes.describe(source, mirror, rebuild)
                self.result.status = TableStatus.DRY_RUN
                for line in self.result.plan:
                    self.say("plan: %s", line)
                return
            if isinstance(step, steps.Done):
                self._finish(source, mirror, step.reason)
                return
            if isinstance(step, steps.Blocked):
                raise HistoryError(f"{self.table}: {step.reason}")
            if isinstance(step, steps.Truncate):
                with _Clock(self.result, "committing"):
                    bid = boundary.close_change_set(self.catalog, self.opts.source_namespace, self.table,
                                                    self.opts.run_id)
                self.result.truncated += 1
                self.say("closed the open change set: boundary snapshot %s", bid)
            elif isinstance(step, steps.Advance):
                with _Clock(self.result, "committing"):
                    self.catalog.set_checkpoint(self.opts.cow_namespace, self.mirror, step.target.wap_id)
                self.say("the source only rewrote files up to snapshot %s: checkpoint moved, nothing to merge",
                         step.target.snapshot_id)
            elif isinstance(step, steps.Merge):
                self._merge(changes, step, source, mirror)
            elif isinstance(step, steps.Publish):
                self._publish(changes, step, source, mirror)
            source, mirror = self.states()
        raise OlakeCowError(f"{self.table}: no progress after {MAX_STEPS} steps")

    def _finish(self, source: TableState, mirror: TableState, reason: str) -> None:
        self.result.status = TableStatus.MERGED if self.result.merges else TableStatus.UP_TO_DATE
        cp = find_checkpoint(mirror)
        self.result.checkpoint = cp.snapshot_id if cp else None
        self.result.last_change_ms = _change_time(source, cp)
        self.say("%s", f"done: {self.result.merges} change set(s) merged" if self.result.merges else reason)

    def _delete_mode_rebuild(self, mirror: TableState) -> Optional[str]:
        """Why the mirror must be rebuilt for the asked --delete-mode (None: it holds that mode)."""
        built = delete_mode_change(mirror, self.opts.delete_mode)
        if built is None:
            return None
        return (f"the mirror was built with --delete-mode {built} and --delete-mode {self.opts.delete_mode} was "
                f"asked: its rows are rebuilt with {self.opts.delete_mode}")

    def _skipped(self, source: TableState, mirror: TableState) -> bool:
        """True for a source that is not OLake's (skipped with a note); raises for a source or a
        mirror name the job must not serve (core/identity.py)."""
        name = f"{self.opts.source_namespace}.{self.table}"
        problem = source_problem(source, f"table {name}")
        if problem is not None and problem.skip:
            self.result.status = TableStatus.SKIPPED
            self.result.notes.append(problem.reason)
            self.say("%s", problem.reason)
            return True
        if problem is not None:
            raise NotOlakeTableError(problem.reason)
        owner = ownership(mirror, name, self.result.mirror)
        if not owner.writable:
            raise ForeignMirrorError(owner.reason)
        if not source.key_required and self.session.sql(
                f"SELECT 1 FROM {self.source_q} WHERE _olake_id IS NULL LIMIT 1").count():
            raise NotOlakeTableError(f"table {name} has rows whose _olake_id is NULL; OLake never writes them and "
                                     "the mirror keys on it, so the table is refused: fill or remove those rows")
        return False

    # --- merge / publish -----------------------------------------------------------------
    def _mirror_table(self, mode: SourceMode) -> MirrorTable:
        location = f"{self.opts.cow_base_location}/{self.mirror}" if self.opts.cow_base_location else None
        return MirrorTable(self.catalog, self.opts.source_namespace, self.table, self.opts.cow_namespace, self.mirror,
                           location, mode, self.fmt, self.opts.target_file_mb, self.opts.delete_mode)

    def _merge(self, changes: ChangeSource, step: steps.Merge, source: TableState, mirror: TableState) -> None:
        """Read the change set, stage its write as core/pruning.py's choose_write says, publish it."""
        with _Clock(self.result, "merging"):
            rebuild_reason = self._mirror_table(changes.mode).prepare(mirror, step.rebuild)
            merge = replace(step, rebuild=rebuild_reason or step.rebuild)
        mirror = self._mirror_state()
        parent_rows = _live_rows(mirror)
        with self._change_set(changes, merge, source, mirror) as (cs, summary):
            shape = None if summary is None else self._shape(mirror, summary.keys, cs, summary.counts)
            with _Clock(self.result, "merging"):
                staged = self.writer.stage(cs, merge.target, mirror, self.fmt, shape,
                                           None if summary is None else summary.keys)
            rebuild = cs.rebuild
        counts = ChangeCounts(0, 0) if summary is None else summary.counts
        self._commit(merge, staged, counts, parent_rows, rebuild, "rebuilt mirror from" if rebuild else "merged")

    def _publish(self, changes: ChangeSource, step: steps.Publish, source: TableState, mirror: TableState) -> None:
        """Publish a write an earlier run staged; its change set is read again only for the audit's
        counts (a rebuild is audited from its own commit)."""
        merge, counts, rebuild = step.merge, ChangeCounts(0, 0), True
        if not merge.rebuild:
            with self._change_set(changes, merge, source, mirror) as (cs, summary):
                rebuild = cs.rebuild
            counts = ChangeCounts(0, 0) if summary is None else summary.counts
        self._commit(merge, mirror.snapshot(step.staged_id), counts, _live_rows(mirror), rebuild, "published staged")

    def _commit(self, merge: steps.Merge, staged: Optional[Snapshot], counts: ChangeCounts, parent_rows: int,
                rebuild: bool, verb: str) -> None:
        with _Clock(self.result, "committing"):
            if staged is not None:
                self.writer.publish(staged, merge.target, counts, parent_rows, rebuild, self.fmt)
            else:
                self.writer.nothing_staged(counts, merge.target, rebuild)
        self.result.merges += 1
        self.say("%s source snapshot %s: %d row(s) upserted, %d key(s) deleted", verb, merge.target.snapshot_id,
                 staged.summary_int(Summary.ADDED_RECORDS) if rebuild and staged else counts.upserts, counts.deletes)

    def _reader(self, mode: SourceMode, source: TableState, mirror: TableState) -> SnapshotReader:
        table = SourceTable(self.opts.source_namespace, self.table, self.source_q, source)
        return READERS[mode](self.session, self.catalog, table, self.opts.delete_mode,
                             mirror_target_bytes(mirror.properties))

    @contextmanager
    def _change_set(self, changes: ChangeSource, merge: steps.Merge, source: TableState,
                    mirror: TableState) -> Iterator[Tuple[ChangeSet, Optional[ChangeSummary]]]:
        """The merge's change set, and (unless it rebuilds) one pass over it: its counts for the
        audit, its keys for the write. Closed on the way out."""
        reader = self._reader(changes.mode, source, mirror)
        with _Clock(self.result, "reading_changes"):
            cs: ChangeSet = changes.read(reader, merge, source)
        try:
            for note in cs.notes:
                self.say("%s", note)
                self.result.notes.append(note)
            self.result.files_read += cs.files_read
            self.result.bytes_read += cs.bytes_read
            summary = None
            if not cs.rebuild:
                with _Clock(self.result, "reading_changes"):
                    summary = self.writer.summarize(cs.frame, cs.records_read)
            yield cs, summary
        finally:
            cs.close()

    def _shape(self, mirror: TableState, keys: Optional[list], cs: ChangeSet, counts: ChangeCounts) -> MergeShape:
        with _Clock(self.result, "planning"):
            shape = self.writer.shape(mirror, keys, cs.key_range)
        spread = shape.spread and self.fmt == MirrorFormat.COW
        self.say("the change set (%d upserts, %d deletes) can touch %d of the mirror's %d files%s",
                 counts.upserts, counts.deletes, shape.touched, shape.files,
                 " (spread: rewritten without a global sort)" if spread else "")
        return shape

    # --- after the merges ----------------------------------------------------------------
    def _maintain(self, changes: ChangeSource) -> None:
        source, mirror = self.states()
        with _Clock(self.result, "maintenance"):
            pair = TablePair(self.opts.source_namespace, self.table, self.opts.cow_namespace, self.mirror)
            self.result.maintenance = maintain(self.session, self.catalog, pair, self.opts.maintenance, changes,
                                               self.fmt, source, mirror, self.say)

    def _verify(self, mode: SourceMode) -> None:
        from .verify import verify_mirror

        _, mirror = self.states()
        checkpoint = find_checkpoint(mirror)
        if checkpoint is None:
            raise OlakeCowError(f"{self.table}: --verify: the mirror holds nothing yet")
        with _Clock(self.result, "verify"):
            found = verify_mirror(self.session, self.source_q, self.mirror_q, checkpoint.snapshot_id,
                                  self.opts.delete_mode)
        self.result.verify = found.to_dict()
        self.say("verify against source snapshot %s: %s", checkpoint.snapshot_id, found.describe())
        if not found.ok:
            text = f"verify: {found.describe()}"
            self.result.fail(OlakeCowError(text), text)
            self.result.status = TableStatus.VERIFY_FAILED


def _change_time(source: TableState, checkpoint: Optional[Marker]) -> Optional[int]:
    """Commit time of the newest source change the mirror holds (for the lag metric)."""
    if checkpoint is None:
        return None
    held = source.snapshot(checkpoint.snapshot_id)
    if held is not None and held.is_boundary:  # truncate mode: the change set is the boundary's parent
        held = source.snapshot(held.parent_id)
    return held.timestamp_ms if held else None
