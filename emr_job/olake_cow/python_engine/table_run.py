"""One table on the Python engine: the core's checks and planner, this engine's reader and writer.
Work it leaves to Spark raises HandOver before anything is written (reader.py)."""
import logging
import time
from typing import Any, List, Tuple

from ..core import steps
from ..core.audit import ChangeCounts
from ..core.budget import Budget, first_build, over_budget
from ..core.changesource import for_mode
from ..core.checkpoint import CHECKPOINT_PROPERTY
from ..core.config import DestinationConfig
from ..core.engines import python_refusal
from ..core.errors import (
    ForeignMirrorError,
    HistoryError,
    NotOlakeTableError,
    OlakeCowError,
    TableNotFoundError,
)
from ..core.failure import fail_table
from ..core.identifiers import MIRROR_SUFFIX
from ..core.identity import ownership, source_problem
from ..core.mirror_props import kept_properties, set_back
from ..core.modes import Engine, MirrorFormat, SourceMode, resolve_format, resolve_mode
from ..core.options import JobOptions
from ..core.planner import describe_table, plan_table, rebuild_reason, repair_reason
from ..core.readonly import other_truncates_note
from ..core.snapshots import Summary, TableState
from ..core.summary import TableResult, TableStatus
from .allocator import use_system_allocator
from .catalog import load
from .create import create_mirror
from .merge import build_cow, merge_cow, publish_staged, replaced_files
from .reader import ArrowHistoryReader, HandOver

log = logging.getLogger("olake_cow")
ENGINE = Engine.PYTHON.value
MAX_STEPS = 1000


class PythonTableRun:
    """Brings one mirror up to date on the Python engine, or hands it over (HandOver)."""

    def __init__(self, catalog: Any, opts: JobOptions, table: str, budget: Budget) -> None:
        self.catalog, self.opts, self.table, self.budget = catalog, opts, table, budget
        self.mirror = f"{table}{MIRROR_SUFFIX}"
        self.name = f"{opts.source_namespace}.{table}"
        self.result = TableResult(table=table, mirror=f"{opts.cow_namespace}.{self.mirror}", engine=ENGINE)

    def say(self, msg: str, *args: object) -> None:
        log.info("[%s] " + msg, self.table, *args)

    def states(self) -> Tuple[Any, TableState, Any, TableState]:
        src, source = load(self.catalog, self.opts.source_namespace, self.table)
        mir, mirror = load(self.catalog, self.opts.cow_namespace, self.mirror)
        return src, source, mir, mirror

    def run(self) -> TableResult:
        started = time.monotonic()
        try:
            self._run()
        finally:
            self.result.duration_s = round(time.monotonic() - started, 3)
        return self.result

    def _run(self) -> None:
        if self.opts.maintenance.requested or self.opts.maintenance.only or self.opts.verify:
            raise HandOver("maintenance and --verify run on the Spark engine")
        src, source, mir, mirror = self.states()
        if not source.exists:
            raise TableNotFoundError(f"source table {self.name} does not exist")
        problem = source_problem(source, f"table {self.name}")
        if problem is not None and problem.skip:
            self.result.status = TableStatus.SKIPPED
            self.result.notes.append(problem.reason)
            return
        if problem is not None:
            raise NotOlakeTableError(problem.reason)
        owner = ownership(mirror, self.name, self.result.mirror, source.uuid)
        if not owner.writable:
            raise ForeignMirrorError(owner.reason)
        mode = resolve_mode(source, mirror, self.opts.source_mode, self.result.mirror)
        fmt, upgrade = resolve_format(mirror, self.opts.mirror_format, self.opts.upgrade_mirror, self.result.mirror)
        self.result.source_mode, self.result.mirror_format = mode.value, fmt.value
        refusal = python_refusal(source, mirror, mode, fmt, upgrade, self.opts.ask)
        if refusal:
            raise HandOver(refusal)
        for note in filter(None, [owner.note, other_truncates_note(source, mirror, self.name)]):  # the rows
            self.result.notes.append(note)  # another job's truncates took, which the mirror keeps
            self.say("%s", note)
        self._loop(src, source, *_set_back(self, source, mir, mirror))

    def _fits(self, source: TableState, mirror: TableState, rebuild: bool = False) -> None:
        """Hand over what is over budget (metadata only); the rest the Spark engine must do was handed
        over before the loop (python_refusal), and the merge follows the source's layout (evolve.py)."""
        why = over_budget(source, mirror, self.budget, rebuild)
        if why:
            raise HandOver(why)

    def _loop(self, src: Any, source: TableState, mir: Any, mirror: TableState) -> None:
        target = source.current_id
        self.result.target = target
        # As the Spark engine's table job notes a rebuild: why, and whether it repaired someone's change.
        repair, rebuild = repair_reason(source, mirror, self.opts.ask), rebuild_reason(source, mirror, self.opts.ask)
        from pyiceberg.exceptions import CommitFailedException, ValidationException

        moved = 0
        for _ in range(MAX_STEPS):
            step = plan_table(source, mirror, SourceMode.READONLY, self.opts.ask, target)
            if self.opts.dry_run:
                self.result.plan = describe_table(source, mirror, SourceMode.READONLY, self.opts.ask)
                self.result.status = TableStatus.DRY_RUN
                return
            if isinstance(step, steps.Done):
                self.result.note_rebuild(repair, rebuild)
                self.result.finish(source, mirror)
                merged = f"done: {self.result.merges} change set(s) merged"
                self.say("%s", merged if self.result.merges else step.reason)
                return
            if isinstance(step, steps.Blocked):
                raise HistoryError(f"{self.table}: {step.reason}")
            try:
                _carry_out(self, step, src, source, mir, mirror)
            except (CommitFailedException, ValidationException) as exc:  # another run or someone committed
                moved = steps.planned_again(moved, self.table, exc)
                self.say("the mirror moved under this step's commit (%s): planning again from it", exc)
                src, source, mir, mirror = self.states()
                repair = repair or repair_reason(source, mirror, self.opts.ask)  # someone's commit it met
                continue
            src, source, mir, mirror = self.states()
        raise OlakeCowError(f"{self.table}: no progress after {MAX_STEPS} steps")

    def _build(self, step: steps.Merge, src: Any, source: TableState, mir: Any, mirror: TableState) -> None:
        """A first build or a rebuild: the source snapshot read (a source it refuses leaves nothing
        behind), the mirror created (unless it is there: left empty by a run killed before its
        write, or holding rows a rebuild replaces), then every row written into it in one commit
        that drops every file it held."""
        rebuild = not first_build(mirror)
        self._fits(source, mirror, rebuild)
        replaced = replaced_files(mir, mirror) if rebuild else []
        cs = read_changes(src, source, step, self.opts, self.result, whole_source=True)
        t0 = time.monotonic()
        if mir is None:
            create_mirror(self.catalog, src, self.opts.cow_namespace, self.mirror, self.name,
                          self.opts.mirror_location(self.mirror), MirrorFormat.COW, SourceMode.READONLY,
                          self.opts.delete_mode, self.opts.target_file_mb)
            self.say("created mirror %s (readonly mode, cow format)", self.result.mirror)
            mir, mirror = load(self.catalog, self.opts.cow_namespace, self.mirror)
        else:
            mir, mirror = self._kept(mir, mirror)
        read = source.snapshot(step.read_id)
        for what in build_cow(mir, cs, step, self.opts.delete_mode, self.result,
                              read.summary_int(Summary.TOTAL_FILES_SIZE) if read is not None else 0, src, replaced):
            self.say("mirror follows the source's %s", what)
        self.result.add_time("merging", time.monotonic() - t0)
        self.result.merges += 1
        self.say("rebuilt mirror from source snapshot %s: %d row(s) upserted, 0 key(s) deleted",
                 step.target.snapshot_id, cs.counts.upserts)

    def _kept(self, mir: Any, mirror: TableState) -> Tuple[Any, TableState]:
        return keep_properties(self.catalog, self.opts, self.table, mir, mirror)

    def _publish(self, step: steps.Publish, src: Any, source: TableState, mir: Any, mirror: TableState) -> None:
        """Publish a write a Spark run staged and did not publish, as the Spark engine would: its change
        set is read again only for the audit's counts (a rebuild is audited from its own commit)."""
        merge, counts = step.merge, ChangeCounts(0, 0)
        if not merge.rebuild:
            self._fits(source, mirror)
            counts = read_changes(src, source, merge, self.opts, self.result).counts
        t0 = time.monotonic()
        upserted = publish_staged(mir, mirror, step.staged_id, merge, counts, self.opts.delete_mode, self.result)
        self.result.add_time("committing", time.monotonic() - t0)
        self.result.merges += 1
        self.say("published staged source snapshot %s: %d row(s) upserted, %d key(s) deleted",
                 merge.target.snapshot_id, upserted, counts.deletes)

    def _merge(self, step: steps.Merge, src: Any, source: TableState, mir: Any, mirror: TableState) -> None:
        self._fits(source, mirror)
        mir, mirror = self._kept(mir, mirror)
        cs = read_changes(src, source, step, self.opts, self.result)
        t0 = time.monotonic()
        for what in merge_cow(mir, mirror, cs, step, self.opts.delete_mode, self.result, src):
            self.say("mirror follows the source's %s", what)
        self.result.add_time("merging", time.monotonic() - t0)
        self.result.merges += 1
        self.say("merged source snapshot %s: %d row(s) upserted, %d key(s) deleted", step.target.snapshot_id,
                 cs.counts.upserts, cs.counts.deletes)


def _set_back(run: PythonTableRun, source: TableState, mir: Any, mirror: TableState) -> Tuple[Any, TableState]:
    """The mirror after the job's properties someone set are set back (mirror_props.set_back), noted."""
    reset, notes = set_back(source, mirror, run.result.mirror)
    for note in notes:
        run.result.notes.append(note)
        run.say("%s", note)
    if not reset or run.opts.dry_run:
        return mir, mirror
    with mir.transaction() as tx:
        tx.set_properties(reset)
    run.say("set back %s", ", ".join(sorted(reset)))
    return load(run.catalog, run.opts.cow_namespace, run.mirror)


def keep_properties(catalog: Any, opts: JobOptions, table: str, mir: Any, mirror: TableState) -> Tuple[Any, TableState]:
    """The mirror (pyiceberg table, state) with the properties every merge keeps on it (mirror_props.py)."""
    name = f"{table}{MIRROR_SUFFIX}"
    changed = kept_properties(mirror, SourceMode.READONLY, f"{opts.source_namespace}.{table}", opts.target_file_mb,
                              table)
    if not changed:
        return mir, mirror
    with mir.transaction() as tx:
        tx.set_properties(changed)
    return load(catalog, opts.cow_namespace, name)


def read_changes(src: Any, source: TableState, step: steps.Merge, opts: JobOptions, result: TableResult,
                 whole_source: bool = False) -> Any:
    """The merge's change set (an ArrowChangeSet) of pyiceberg table `src`, read and counted."""
    t0 = time.monotonic()
    reader = ArrowHistoryReader(src, source, opts.delete_mode, whole_source=whole_source)
    cs = for_mode(SourceMode.READONLY).read(reader, step, source)
    result.add_time("reading_changes", time.monotonic() - t0)
    result.files_read += cs.files_read
    result.bytes_read += cs.bytes_read
    return cs


def run_python_tables(catalog: Any, cfg: DestinationConfig, opts: JobOptions, tables: List[str],
                      budget: Budget) -> Tuple[List[TableResult], List[Tuple[str, str]]]:
    """(results of the tables the Python engine ran, [(table, why)] of those it handed over)."""
    use_system_allocator()
    results: List[TableResult] = []
    handed: List[Tuple[str, str]] = []
    secrets = cfg.secret_values()
    for table in tables:
        run = PythonTableRun(catalog, opts, table, budget)
        try:
            results.append(run.run())
        except HandOver as why:
            handed.append((table, str(why)))
        except Exception as exc:  # noqa: BLE001 - reported per table
            results.append(fail_table(run.result, exc, secrets, cfg))
    return results, handed


def _carry_out(run: PythonTableRun, step: steps.Step, src: Any, source: TableState, mir: Any,
               mirror: TableState) -> None:
    """Carry out one step of `run`; each commits once, as a compare-and-swap on the mirror it planned from."""
    if isinstance(step, steps.Advance):
        with mir.transaction() as tx:
            tx.set_properties({CHECKPOINT_PROPERTY: step.target.wap_id, **dict(step.properties)})
    elif isinstance(step, steps.Merge) and (step.rebuild or first_build(mirror)):
        run._build(step, src, source, mir, mirror)
    elif isinstance(step, steps.Merge):
        run._merge(step, src, source, mir, mirror)
    elif isinstance(step, steps.Publish):
        run._publish(step, src, source, mir, mirror)
    else:
        raise HandOver(f"{type(step).__name__.lower()} step: the Spark engine carries it out")

