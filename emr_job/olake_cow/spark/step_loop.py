"""The plan -> act loop of one table, on its resolved write path (paths.py): ask the change source
for the next step, carry it out, read both tables again, repeat. Merge reads a change set and
stages its write (merge.py); Publish commits a write an earlier run staged.
"""
from contextlib import contextmanager
from dataclasses import replace
from typing import Any, Iterator, Optional, Protocol, Tuple

from ..core import steps
from ..core.audit import ChangeCounts, live_rows
from ..core.errors import HistoryError, MirrorMovedError, OlakeCowError
from ..core.filesize import mirror_target_bytes
from ..core.identity import layout_change
from ..core.modes import SourceMode
from ..core.options import JobOptions
from ..core.planner import describe_table, plan_table, repair_reason
from ..core.pruning import MergeShape
from ..core.snapshots import Snapshot, Summary, TableState
from ..core.summary import TableResult, TableStatus
from . import boundary
from .catalog import IcebergCatalog
from .change_set import ChangeSet, SourceTable
from .clock import Clock
from .merge import ChangeSummary, MirrorWriter
from .mirror_table import MirrorTable
from .paths import TablePath
from .publish import publish

MAX_STEPS = 10_000


class TableWork(Protocol):
    """What the loop needs of one table's job (table_job.TableJob): its names and options, its
    result, its adapters (opened on first use) and its metadata reads."""

    table: str
    mirror: str
    source_q: str
    opts: JobOptions
    result: TableResult

    @property
    def session(self) -> Any: ...

    @property
    def catalog(self) -> IcebergCatalog: ...

    @property
    def writer(self) -> MirrorWriter: ...

    def say(self, msg: str, *args: object) -> None: ...

    def states(self) -> Tuple[TableState, TableState]: ...

    def mirror_state(self) -> TableState: ...

    def mirror_table(self, path: TablePath[Any]) -> MirrorTable: ...


def _still_on(current: Optional[int], planned: Optional[int], what: str) -> None:
    """Raise MirrorMovedError when the mirror's snapshot `current` is not `planned`, the one the step
    was planned from (None: a table made in this step, nothing to compare)."""
    if planned is not None and current != planned:
        raise MirrorMovedError(f"the mirror moved from snapshot {planned}, which this step was planned on, to "
                               f"{current} (someone committed, or another run published): {what}")


class StepLoop:
    def __init__(self, job: TableWork, path: TablePath[Any]) -> None:
        self.job, self.path, self.result, self.opts = job, path, job.result, job.opts
        self.moved = 0
        self.met: Optional[str] = None  # someone's change the loop met after a step's mirror moved

    def run(self, source: TableState, mirror: TableState) -> None:
        job = self.job
        target = source.current_id  # the run stops here: later commits are the next run's
        self.result.target = target if self.path.mode == SourceMode.READONLY else None
        for _ in range(MAX_STEPS):
            step = plan_table(source, mirror, self.path.mode, self.opts.ask, target,
                              may_close=self.result.truncated == 0)
            if self.opts.dry_run:
                self.result.plan = describe_table(source, mirror, self.path.mode, self.opts.ask)
                self.result.status = TableStatus.DRY_RUN
                for line in self.result.plan:
                    job.say("plan: %s", line)
                return
            if isinstance(step, steps.Done):
                self._finish(source, mirror, step.reason)
                return
            if isinstance(step, steps.Blocked):
                raise HistoryError(f"{job.table}: {step.reason}")
            try:
                _carry_out(self, step, source, mirror)
            except MirrorMovedError as moved:
                self.moved = steps.planned_again(self.moved, job.table, moved)
                job.say("%s; planning again from the mirror as it is now", moved)
                source, mirror = job.states()
                self.met = self.met or repair_reason(source, mirror, self.opts.ask)
                continue
            source, mirror = job.states()
        raise OlakeCowError(f"{job.table}: no progress after {MAX_STEPS} steps")

    def _finish(self, source: TableState, mirror: TableState, reason: str) -> None:
        self.result.finish(source, mirror)
        self.job.say("%s", f"done: {self.result.merges} change set(s) merged" if self.result.merges else reason)

    def run_merge(self, step: steps.Merge, source: TableState, mirror: TableState) -> None:
        """Read the change set, stage its write as core/pruning.py's choose_write says, publish it."""
        job = self.job
        if step.reason and not step.rebuild and step.reason not in self.result.notes:
            self.result.notes.append(step.reason)
        planned = mirror.current_id
        with Clock(self.result, "merging"):
            recreate = step.rebuild and bool(layout_change(source, mirror))
            created = job.mirror_table(self.path).prepare(mirror, step.rebuild, recreate)
            merge = replace(step, rebuild=created or step.rebuild)
        mirror = job.mirror_state()
        on = None if created else planned  # the snapshot this write must be staged on (a new table: none)
        _still_on(mirror.current_id, on, "nothing was written")
        parent_rows = _live_rows(mirror)
        with self._change_set(merge, source, mirror) as (cs, summary):
            keys = None if summary is None else summary.keys
            shape = None if summary is None else self._shape(mirror, keys, cs, summary.counts)
            with Clock(self.result, "merging"):
                staged = job.writer.stage(cs, merge.target, mirror, self.path, shape, keys)
            rebuild = cs.rebuild
        counts = ChangeCounts(0, 0) if summary is None else summary.counts
        if staged is not None:
            _still_on(staged.parent_id, on, f"staged snapshot {staged.snapshot_id} is not published")
        self._commit(merge, staged, counts, parent_rows, rebuild, "rebuilt mirror from" if rebuild else "merged",
                     on)

    def run_publish(self, step: steps.Publish, source: TableState, mirror: TableState) -> None:
        """Publish a write an earlier run staged; its change set is read again only for the audit's
        counts (a rebuild is audited from its own commit)."""
        merge, counts, rebuild = step.merge, ChangeCounts(0, 0), True
        if not merge.rebuild:
            with self._change_set(merge, source, mirror) as (cs, summary):
                rebuild = cs.rebuild
            counts = ChangeCounts(0, 0) if summary is None else summary.counts
        self._commit(merge, mirror.snapshot(step.staged_id), counts, _live_rows(mirror), rebuild, "published staged",
                     mirror.current_id)

    def _commit(self, merge: steps.Merge, staged: Optional[Snapshot], counts: ChangeCounts, parent_rows: int,
                rebuild: bool, verb: str, on: Optional[int]) -> None:
        """Publish `staged` (or, None, a commit of no file) onto snapshot `on` the step planned from."""
        with Clock(self.result, "committing"):
            if staged is not None:
                self.job.writer.publish(staged, merge, counts, parent_rows, rebuild, self.path.fmt)
            else:
                self.job.writer.nothing_staged(counts, merge, rebuild, on)
        self.result.merges += 1
        self.job.say("%s source snapshot %s: %d row(s) upserted, %d key(s) deleted", verb, merge.target.snapshot_id,
                     staged.summary_int(Summary.ADDED_RECORDS) if rebuild and staged else counts.upserts,
                     counts.deletes)

    @contextmanager
    def _change_set(self, merge: steps.Merge, source: TableState,
                    mirror: TableState) -> Iterator[Tuple[ChangeSet, Optional[ChangeSummary]]]:
        """The merge's change set, and (unless it rebuilds) one pass over it: its counts for the
        audit, its keys for the write. Closed on the way out."""
        job = self.job
        table = SourceTable(self.opts.source_namespace, job.table, job.source_q, source)
        reader = self.path.reader(job.session, job.catalog, table, self.opts.delete_mode,
                                  mirror_target_bytes(mirror.properties))
        with Clock(self.result, "reading_changes"):
            cs = self.path.read(reader, merge, source)
        try:
            for note in cs.notes:
                job.say("%s", note)
                self.result.notes.append(note)
            self.result.files_read += cs.files_read
            self.result.bytes_read += cs.bytes_read
            summary = None
            if not cs.rebuild:
                with Clock(self.result, "reading_changes"):
                    summary = job.writer.summarize(cs.frame, cs.records_read)
            yield cs, summary
        finally:
            cs.close()

    def _shape(self, mirror: TableState, keys: Optional[list], cs: ChangeSet, counts: ChangeCounts) -> MergeShape:
        with Clock(self.result, "planning"):
            shape = self.job.writer.shape(mirror, keys, cs.key_range)
        spread = shape.spread and self.path.cow
        self.job.say("the change set (%d upserts, %d deletes) can touch %d of the mirror's %d files%s",
                     counts.upserts, counts.deletes, shape.touched, shape.files,
                     " (spread: rewritten without a global sort)" if spread else "")
        return shape


def _live_rows(mirror: TableState) -> int:
    parent = mirror.snapshot(mirror.current_id)
    return live_rows(parent) if parent else 0


def _carry_out(loop: StepLoop, step: steps.Step, source: TableState, mirror: TableState) -> None:
    """One step of `loop` that writes (each ends in one commit, or one per table it writes). A step
    whose mirror moved since it was planned (`mirror`) raises MirrorMovedError with nothing
    published: a commit someone lands meanwhile is seen by the next plan, never published over."""
    job, result, opts = loop.job, loop.result, loop.opts
    if isinstance(step, steps.Merge):
        loop.run_merge(step, source, mirror)
    elif isinstance(step, steps.Publish):
        loop.run_publish(step, source, mirror)
    elif isinstance(step, steps.Truncate):
        with Clock(result, "committing"):
            bid = boundary.close_change_set(job.catalog, opts.source_namespace, job.table, opts.run_id, result.mirror,
                                            step.first_after)
        result.truncated += 1
        job.say("closed the open change set: boundary snapshot %s", bid)
    elif isinstance(step, steps.Advance):
        with Clock(result, "committing"):
            job.catalog.set_checkpoint(opts.cow_namespace, job.mirror, step.target.wap_id, dict(step.properties))
        job.say("the source only rewrote files up to snapshot %s: checkpoint moved, nothing to merge",
                step.target.snapshot_id)
    elif isinstance(step, steps.Keep):
        # --keep-mirror-changes: a commit of no file carrying the checkpoint makes the mirror's
        # current state the job's; what the planner found goes into the summary's notes.
        with Clock(result, "committing"):
            publish(job.catalog, opts.cow_namespace, job.mirror, None, step.target.wap_id, parent=mirror.current_id)
        note = f"kept someone's change to the mirror as its content (--keep-mirror-changes): {step.reason}"
        result.notes.append(note)
        job.say("%s", note)
