"""Runs the plan→act loop for each table of a namespace (the only module that sequences
Spark work). Per table: read both tables' metadata, ask the planner, do one step, repeat."""
import logging
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from typing import Callable, List, Optional

from . import planner
from .audit import audit
from .changes import (
    KEY,
    ChangeStats,
    aligned_rows,
    change_stats,
    key_range,
    merge_sql,
    range_condition,
    read_change_set,
)
from .checkpoint import SOURCE_PROPERTY, Marker, find_checkpoint, staged_for
from .config import DestinationConfig, redact
from .errors import HistoryError, NotOlakeTableError, OlakeCowError, SchemaEvolutionError
from .iceberg import DEFAULT_TARGET_FILE_MB, TARGET_FILE_SIZE, IcebergTables, target_file_size
from .identifiers import qualified, quote
from .maintenance import HOUR_MS, Maintainer, MaintenanceOptions, MaintenanceResult, mirror_cutoff, source_cutoff
from .schema import schema_changes
from .snapshots import Snapshot, TableState
from .spark_session import table_session
from .summary import TableResult

log = logging.getLogger("olake_cow")
MAX_STEPS = 10_000


@dataclass(frozen=True)
class JobOptions:
    source_namespace: str
    cow_namespace: str
    cow_base_location: Optional[str]  # None: the catalog's default location (hadoop catalogs)
    delete_mode: str = "keep"
    dry_run: bool = False
    parallelism: int = 4
    run_id: str = ""
    maintenance: MaintenanceOptions = field(default_factory=MaintenanceOptions)
    target_file_mb: Optional[int] = None  # None: DEFAULT_TARGET_FILE_MB for new mirrors, keep for others


class _Clock:
    def __init__(self, result: TableResult, phase: str) -> None:
        self.result, self.phase = result, phase

    def __enter__(self) -> "_Clock":
        self.t0 = time.monotonic()
        return self

    def __exit__(self, *exc: object) -> None:
        self.result.add_time(self.phase, time.monotonic() - self.t0)


class TableJob:
    """Brings one mirror up to date with its source table."""

    def __init__(self, root_session, cfg: DestinationConfig, opts: JobOptions, table: str) -> None:
        self.cfg, self.opts, self.table = cfg, opts, table
        self.session = table_session(root_session, cfg)
        self.tables = IcebergTables(self.session, cfg.catalog_name)
        self.mirror = f"{table}_cow"
        self.source_q = qualified(cfg.catalog_name, opts.source_namespace, table)
        self.mirror_q = qualified(cfg.catalog_name, opts.cow_namespace, self.mirror)
        self.result = TableResult(table=table, mirror=f"{opts.cow_namespace}.{self.mirror}")

    def say(self, msg: str, *args: object) -> None:
        log.info("[%s] " + msg, self.table, *args)

    def states(self):
        with _Clock(self.result, "planning"):
            return (self.tables.state(self.opts.source_namespace, self.table),
                    self.tables.state(self.opts.cow_namespace, self.mirror))

    def run(self) -> TableResult:
        started = time.monotonic()
        try:
            if self.opts.maintenance.only and not self.opts.dry_run:
                self.result.status = "maintained"
            else:
                self._loop()
            if self.opts.maintenance.requested and not self.opts.dry_run:
                self._maintain()  # only reached when the merges succeeded
        finally:
            self.result.duration_s = round(time.monotonic() - started, 3)
        return self.result

    def _loop(self) -> None:
        for _ in range(MAX_STEPS):
            source, mirror = self.states()
            if not source.exists:
                raise HistoryError(f"source table {self.opts.source_namespace}.{self.table} "
                                   "does not exist")
            self._key_id(source)  # checked before anything is committed (the truncate)
            step = planner.plan_next(source, mirror)
            if self.opts.dry_run:
                self.result.plan = planner.plan_run(source, mirror)
                self.result.status = "dry_run"
                for line in self.result.plan:
                    self.say("plan: %s", line)
                return
            if isinstance(step, planner.Done):
                self.result.status = "merged" if self.result.boundaries_merged else "up_to_date"
                cp = find_checkpoint(mirror)
                self.result.checkpoint = cp.boundary_id if cp else None
                self.result.last_change_ms = _change_time(source, cp.boundary_id if cp else None)
                self.say("%s", step.reason if not self.result.boundaries_merged else
                         f"done: {self.result.boundaries_merged} change set(s) merged")
                return
            if isinstance(step, planner.Blocked):
                raise HistoryError(f"{self.table}: {step.reason}")
            if isinstance(step, planner.Truncate):
                with _Clock(self.result, "committing"):
                    bid = self.tables.truncate(self.opts.source_namespace, self.table,
                                               self.opts.run_id)
                self.result.truncated += 1
                self.say("closed the open change set: boundary snapshot %s", bid)
            elif isinstance(step, (planner.Merge, planner.Publish)):
                self._apply(step, source, mirror)
        raise OlakeCowError(f"{self.table}: no progress after {MAX_STEPS} steps")

    def _key_id(self, source: TableState) -> int:
        if source.key_field_id is None:
            raise NotOlakeTableError(f"table {self.opts.source_namespace}.{self.table} has no _olake_id "
                                     "column; it is not an OLake table")
        return source.key_field_id

    # --- maintenance ---------------------------------------------------------------------
    def _maintain(self) -> None:
        m, out = self.opts.maintenance, MaintenanceResult()
        src_ns, cow_ns = self.opts.source_namespace, self.opts.cow_namespace
        worker = Maintainer(self.session, self.cfg.catalog_name)
        source, mirror = self.states()
        now_ms = int(time.time() * 1000)
        with _Clock(self.result, "maintenance"):
            if m.expire_source_hours is not None:
                cutoff, note = source_cutoff(now_ms, m.expire_source_hours, source, find_checkpoint(mirror))
                if note:
                    out.notes.append(note)
                    self.say("%s", note)
                if cutoff is not None:
                    worker.expire(src_ns, self.table, cutoff, out)
            if mirror.exists:
                if m.compact_files:
                    worker.compact(cow_ns, self.mirror, out)
                if m.rewrite_manifests:
                    worker.rewrite_manifests(cow_ns, self.mirror, out)
                if m.expire_mirror_hours is not None:
                    worker.expire(cow_ns, self.mirror, mirror_cutoff(now_ms, m.expire_mirror_hours), out)
                after = self.tables.state(cow_ns, self.mirror)
                snap = after.snapshot(after.current_id)
                if snap is not None and snap.delete_file_count:
                    raise OlakeCowError(f"{self.result.mirror}: maintenance left delete files in the mirror")
            if m.remove_orphans_hours is not None:
                older = now_ms - int(m.remove_orphans_hours * HOUR_MS)
                worker.orphans(src_ns, self.table, older, m.orphans_dry_run, out)
                if mirror.exists:
                    worker.orphans(cow_ns, self.mirror, older, m.orphans_dry_run, out)
        self.result.maintenance = asdict(out)
        self.say("maintenance: %d snapshot(s) expired, %d file(s) / %d bytes removed, %d manifest(s) "
                 "rewritten, %d file(s) compacted, %d orphan file(s)%s", out.snapshots_expired,
                 out.files_removed, out.bytes_removed, out.manifests_rewritten, out.files_compacted,
                 len(out.orphan_files), " (dry run: listed, not removed)" if m.orphans_dry_run else "")

    # --- merge / publish -----------------------------------------------------------------
    def _prepare_mirror(self, rebuild: bool, mirror: TableState) -> bool:
        """Create or evolve the mirror; returns whether this change set replaces its content."""
        ns, src_ns = self.opts.cow_namespace, self.opts.source_namespace
        recreate = not mirror.exists
        if mirror.exists and rebuild:
            same_spec = (self.tables.spec_string(src_ns, self.table)
                         == self.tables.spec_string(ns, self.mirror))
            try:
                self._evolve_schema()
            except SchemaEvolutionError:
                same_spec = False
            if not same_spec:
                self.say("source partitioning/schema differs from the mirror's: recreating the mirror")
                self.tables.drop(ns, self.mirror)
                recreate = True
        if recreate:
            self.tables.create_namespace(ns)
            location = (f"{self.opts.cow_base_location}/{self.mirror}"
                        if self.opts.cow_base_location else None)
            size = target_file_size(self.opts.target_file_mb or DEFAULT_TARGET_FILE_MB)
            self.tables.create_mirror(src_ns, self.table, ns, self.mirror, location,
                                      {SOURCE_PROPERTY: f"{src_ns}.{self.table}", TARGET_FILE_SIZE: size})
            self.say("created mirror %s", self.result.mirror)
            return True
        wanted = target_file_size(self.opts.target_file_mb) if self.opts.target_file_mb else None
        if wanted and mirror.properties.get(TARGET_FILE_SIZE) != wanted:
            self.tables.set_property(ns, self.mirror, TARGET_FILE_SIZE, wanted)
        if not rebuild:
            self._evolve_schema()
        return rebuild

    def _evolve_schema(self) -> None:
        src = self.session.table(self.source_q).schema
        mir = self.session.table(self.mirror_q).schema
        steps = schema_changes([(f.name, f.dataType.simpleString()) for f in src.fields],
                               [(f.name, f.dataType.simpleString()) for f in mir.fields],
                               self.table)
        for op, name, typ in steps:
            if op == "add":
                self.session.sql(f"ALTER TABLE {self.mirror_q} ADD COLUMN {quote(name)} {typ}")
            else:
                self.session.sql(f"ALTER TABLE {self.mirror_q} ALTER COLUMN {quote(name)} TYPE {typ}")
            self.say("schema: %s column %s %s", op, name, typ)

    def _apply(self, step, source: TableState, mirror: TableState) -> None:
        marker = Marker(str(source.uuid), step.boundary_id)
        ns = self.opts.cow_namespace
        rebuild = step.rebuild
        if isinstance(step, planner.Merge):
            with _Clock(self.result, "merging"):
                rebuild = self._prepare_mirror(rebuild, mirror)
            mirror = self.tables.state(ns, self.mirror)
        parent = mirror.snapshot(mirror.current_id)
        parent_records = parent.summary_int("total-records") if parent else 0
        stats, keys = ChangeStats(0, 0, 0, 0), None
        with _Clock(self.result, "reading_changes"):
            changes = read_change_set(self.session, self.source_q, step.change_id, self._key_id(source),
                                      self.opts.delete_mode, rebuild=rebuild)
            if not rebuild:
                keys = key_range(changes)
                mirror_keys = self.session.table(self.mirror_q).where(range_condition("", keys)).select(KEY)
                stats = change_stats(changes, mirror_keys)
        try:
            if isinstance(step, planner.Merge):
                with _Clock(self.result, "merging"):
                    self._write(changes, marker, rebuild, mirror, keys)
                mirror = self.tables.state(ns, self.mirror)
                staged = [s for s in staged_for(mirror, marker) if s.parent_id == mirror.current_id]
            else:
                staged = [s for s in mirror.snapshots if s.snapshot_id == step.staged_id]
        finally:
            changes.unpersist()
        if rebuild and staged:
            # A rebuild scans the source once (for the write), so its count comes from the commit;
            # the audit still refuses delete files.
            stats = ChangeStats(staged[0].summary_int("added-records"), 0, 0, 0)
        with _Clock(self.result, "committing"):
            if staged:
                snap = staged[0]
                audit(snap, stats.expected_records(parent_records, rebuild), self.result.mirror)
                self.tables.publish(ns, self.mirror, snap.snapshot_id)
                self._count_io(snap, source.snapshot(step.change_id))
            elif stats.inserted or stats.updated or stats.deleted or rebuild:
                raise OlakeCowError(f"{self.result.mirror}: the merge of boundary "
                                    f"{step.boundary_id} staged no snapshot")
            self.tables.set_checkpoint(ns, self.mirror, marker.wap_id)
        self.result.boundaries_merged += 1
        self.result.rows_inserted += stats.inserted
        self.result.rows_updated += stats.updated
        self.result.rows_deleted += stats.deleted
        verb = "published staged" if isinstance(step, planner.Publish) else (
            "rebuilt mirror from" if rebuild else "merged")
        self.say("%s boundary %s: %d inserted, %d updated, %d deleted", verb, step.boundary_id,
                 stats.inserted, stats.updated, stats.deleted)

    def _count_io(self, published: Snapshot, change: Optional[Snapshot]) -> None:
        """Files and bytes of a merge: the change set read, the mirror files rewritten and written."""
        r, rewritten = self.result, published.summary_int("deleted-data-files")
        r.files_written += published.summary_int("added-data-files")
        r.bytes_written += published.summary_int("added-files-size")
        r.files_rewritten += rewritten
        r.files_read += rewritten
        r.bytes_read += published.summary_int("removed-files-size")
        if change is not None:
            r.files_read += change.summary_int("total-data-files") + change.summary_int("total-delete-files")
            r.bytes_read += change.summary_int("total-files-size")

    def _write(self, changes, marker: Marker, rebuild: bool, mirror: TableState, keys=None) -> None:
        from pyspark.sql import functions as F

        self.session.conf.set("spark.wap.id", marker.wap_id)
        try:
            if rebuild:
                rows = aligned_rows(changes, self.session.table(self.mirror_q).schema)
                # Already range-partitioned and sorted by key: no second shuffle.
                writer = rows.writeTo(self.mirror_q).option("distribution-mode", "none")
                if mirror.current_id is None:
                    writer.append()
                else:
                    writer.overwrite(F.lit(True))
            else:
                view = f"olake_cow_changes_{uuid.uuid4().hex[:12]}"
                changes.createOrReplaceTempView(view)
                try:
                    cols = self.session.table(self.mirror_q).columns
                    self.session.sql(merge_sql(self.mirror_q, quote(view), cols, changes.columns, keys))
                finally:
                    self.session.catalog.dropTempView(view)
        finally:
            self.session.conf.unset("spark.wap.id")


def _change_time(source: TableState, boundary_id: Optional[int]) -> Optional[int]:
    """Commit time of the newest source change the mirror holds (for the lag metric)."""
    boundary = source.snapshot(boundary_id)
    change = source.snapshot(boundary.parent_id) if boundary else None
    return change.timestamp_ms if change else None


def run_tables(root_session, cfg: DestinationConfig, opts: JobOptions, tables: List[str],
               on_result: Optional[Callable[[TableResult], None]] = None) -> List[TableResult]:
    """Run every table, `opts.parallelism` at a time; one failure never stops the others."""
    secrets = cfg.secret_values()

    def one(table: str) -> TableResult:
        try:
            job = TableJob(root_session, cfg, opts, table)
        except Exception as exc:  # noqa: BLE001 - reported per table
            res = TableResult(table=table, mirror=f"{opts.cow_namespace}.{table}_cow")
            return _fail(res, exc, secrets)
        try:
            res = job.run()
        except Exception as exc:  # noqa: BLE001 - reported per table
            res = _fail(job.result, exc, secrets)
        if on_result:
            on_result(res)
        return res

    workers = max(1, min(opts.parallelism, len(tables)))
    if workers == 1:
        return [one(t) for t in tables]
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="olake-cow") as pool:
        return list(pool.map(one, tables))


def _fail(res: TableResult, exc: BaseException, secrets: List[str]) -> TableResult:
    res.status = "failed"
    res.error = redact(error_text(exc), secrets)
    log.error("[%s] failed: %s", res.table, res.error)
    return res


def error_text(exc: BaseException) -> str:
    """One readable line: our own errors as they are; Java errors by their first line."""
    if isinstance(exc, OlakeCowError):
        return str(exc)
    java = getattr(exc, "java_exception", None)
    if java is not None:
        try:
            return f"{java.getClass().getSimpleName()}: {java.getMessage()}"
        except Exception:  # noqa: BLE001
            pass
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"


def new_run_id() -> str:
    return time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()) + "-" + uuid.uuid4().hex[:8]

