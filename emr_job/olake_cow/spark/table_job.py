"""Brings one mirror up to date with its source table: the plan -> act loop.

Per table: read both tables' metadata, ask the change source (changesource.py) for the next step,
carry it out, repeat. The rooms it uses: mirror_table.py (create and evolve the mirror),
boundary_reader.py and history_reader.py (read a change set), merge.py (write, audit, publish),
maintenance.py, verify.py.
"""
import logging
import time
from dataclasses import dataclass
from typing import Any, Optional, Tuple

from ..core.checkpoint import find_checkpoint
from ..core.config import DestinationConfig
from ..core.errors import ForeignMirrorError, NotOlakeTableError, OlakeCowError, SourceModeError, TableNotFoundError
from ..core.formats import MirrorFormat, built_format
from ..core.identifiers import MIRROR_SUFFIX, qualified
from ..core.identity import ownership, source_problem
from ..core.mirror_props import set_back
from ..core.modes import SourceMode, resolve_format, resolve_mode, upgrade_waits
from ..core.options import JobOptions
from ..core.planner import rebuild_reason, repair_reason
from ..core.readonly import other_truncates_note
from ..core.snapshots import TableState
from ..core.summary import TableResult, TableStatus
from .catalog import IcebergCatalog
from .clock import Clock
from .maintenance import TablePair, maintain
from .merge import MirrorWriter
from .mirror_table import MirrorTable
from .paths import TablePath, path_for
from .session import table_session
from .step_loop import StepLoop

log = logging.getLogger("olake_cow")


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

    def mirror_state(self) -> TableState:
        return self._shared.state(self.opts.cow_namespace, self.mirror)

    def states(self) -> Tuple[TableState, TableState]:
        with Clock(self.result, "planning"):
            return self._shared.state(self.opts.source_namespace, self.table), self.mirror_state()

    def run(self) -> TableResult:
        started = time.monotonic()
        try:
            source, mirror = self.states()
            if not source.exists:
                raise TableNotFoundError(f"source table {self.opts.source_namespace}.{self.table} does not exist")
            if self._skipped(source, mirror):  # checked before anything is read or committed
                return self.result
            mode = self._mode(source, mirror)
            fmt, upgrade = _format(source, mirror, self.opts, self.result)
            mirror = _set_back(self, source, mirror)
            path = path_for(mode, fmt)  # the one place a table's (mode, format) is resolved
            self.result.source_mode, self.result.mirror_format = mode.value, fmt.value
            if upgrade and not self.opts.dry_run:
                self.mirror_table(path).upgrade_to_dv()
                self.result.notes.append("upgraded the mirror in place to format version 3 (dv)")
                mirror = self.mirror_state()
            if self.opts.maintenance.only and not self.opts.dry_run:
                self.result.status = TableStatus.MAINTAINED
            else:
                self._merges(source, mirror, path)
            if self.opts.maintenance.requested and not self.opts.dry_run:
                self._maintain(path)  # only reached when the merges succeeded
            if self.opts.verify and not self.opts.dry_run:
                self._verify()
        finally:
            self.result.duration_s = round(time.monotonic() - started, 3)
        return self.result

    def _mode(self, source: TableState, mirror: TableState) -> SourceMode:
        """The table's source mode; what --verify cannot check is refused before anything is committed."""
        mode = resolve_mode(source, mirror, self.opts.source_mode, self.result.mirror)
        if self.opts.verify and mode != SourceMode.READONLY:
            raise SourceModeError(f"{self.table}: --verify needs a readonly mirror: in truncate mode OLake's "
                                  "table no longer holds the rows the mirror is compared with")
        note = _other_truncates_note(source, mirror, mode, f"{self.opts.source_namespace}.{self.table}")
        if note and self.opts.verify:
            raise SourceModeError(f"{self.table}: --verify compares the mirror with OLake's table, and {note}")
        if note:
            self.result.notes.append(note)
            self.say("%s", note)
        return mode

    def _merges(self, source: TableState, mirror: TableState, path: TablePath[Any]) -> None:
        repair, rebuild = repair_reason(source, mirror, self.opts.ask), rebuild_reason(source, mirror, self.opts.ask)
        loop = StepLoop(self, path)
        loop.run(source, mirror)
        self.result.note_rebuild(repair or loop.met, rebuild)  # or someone's commit it met while a step ran

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
        owner = ownership(mirror, name, self.result.mirror, source.uuid)
        if not owner.writable:
            raise ForeignMirrorError(owner.reason)
        if owner.note:  # a source name someone set, read as the job set it
            self.result.notes.append(owner.note)
            self.say("%s", owner.note)
        if not source.key_required and self.session.sql(
                f"SELECT 1 FROM {self.source_q} WHERE _olake_id IS NULL LIMIT 1").count():
            raise NotOlakeTableError(f"table {name} has rows whose _olake_id is NULL; OLake never writes them and "
                                     "the mirror keys on it, so the table is refused: fill or remove those rows")
        return False

    def mirror_table(self, path: TablePath[Any]) -> MirrorTable:
        return MirrorTable(self.catalog, self.opts.source_namespace, self.table, self.opts.cow_namespace, self.mirror,
                           self.opts.mirror_location(self.mirror), path.mode, path.fmt, self.opts.target_file_mb,
                           self.opts.delete_mode)

    # --- after the merges ----------------------------------------------------------------
    def _maintain(self, path: TablePath[Any]) -> None:
        source, mirror = self.states()
        with Clock(self.result, "maintenance"):
            pair = TablePair(self.opts.source_namespace, self.table, self.opts.cow_namespace, self.mirror)
            self.result.maintenance = maintain(self.session, self.catalog, pair, self.opts.maintenance, path.changes,
                                               path.fmt, source, mirror, self.say)

    def _verify(self) -> None:
        from .verify import verify_mirror

        _, mirror = self.states()
        checkpoint = find_checkpoint(mirror)
        if checkpoint is None:
            raise OlakeCowError(f"{self.table}: --verify: the mirror holds nothing yet")
        with Clock(self.result, "verify"):
            found = verify_mirror(self.session, self.source_q, self.mirror_q, checkpoint.snapshot_id,
                                  self.opts.delete_mode)
        self.result.verify = found.to_dict()
        self.say("verify against source snapshot %s: %s", checkpoint.snapshot_id, found.describe())
        if not found.ok:
            text = f"verify: {found.describe()}"
            self.result.fail(OlakeCowError(text), text)
            self.result.status = TableStatus.VERIFY_FAILED


def _set_back(job: TableJob, source: TableState, mirror: TableState) -> TableState:
    """The mirror after the job's properties someone set are set back (mirror_props.set_back), noted."""
    reset, notes = set_back(source, mirror, job.result.mirror)
    for note in notes:
        job.result.notes.append(note)
        job.say("%s", note)
    if not reset or job.opts.dry_run:
        return mirror
    job._shared.set_properties(job.opts.cow_namespace, job.mirror, reset)
    job.say("set back %s", ", ".join(sorted(reset)))
    return job.mirror_state()


def _format(source: TableState, mirror: TableState, opts: JobOptions, result: TableResult) -> Tuple[MirrorFormat, bool]:
    """(the table's mirror format this run, whether it upgrades the mirror in place first): an asked
    upgrade waits while the mirror is not as the job left it (noted), the plan deals with that first."""
    fmt, upgrade = resolve_format(mirror, opts.mirror_format, opts.upgrade_mirror, result.mirror)
    waits = upgrade_waits(source, mirror) if upgrade else None
    if waits:
        result.notes.append(waits)
        log.info("[%s] %s", result.table, waits)
        return built_format(mirror) or fmt, False
    return fmt, upgrade


def _other_truncates_note(source: TableState, mirror: TableState, mode: SourceMode, name: str) -> Optional[str]:
    """A readonly mirror keeps the rows another olake-cow job's truncates removed from its source
    (core/readonly.py): the note that says so."""
    return other_truncates_note(source, mirror, name) if mode == SourceMode.READONLY else None
