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
from ..core.planner import describe_table, plan_table
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


class StepLoop:
    def __init__(self, job: TableWork, path: TablePath[Any]) -> None:
        self.job, self.path, self.result, self.opts = job, path, job.result, job.opts
        self.moved = 0

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
            self._carry_out(step, source, mirror)
            source, mirror = job.states()
        raise OlakeCowError(f"{job.table}: no progress after {MAX_STEPS} steps")

    def _carry_out(self, step: steps.Step, source: TableState, mirror: TableState) -> None:
        """One step that writes (each ends in one commit, or one per table it writes)."""
        if isinstance(step, steps.Truncate):
            self._truncate()
        elif isinstance(step, steps.Advance):
            self._advance(step)
        elif isinstance(step, steps.Keep):
            self._keep(step)
        elif isinstance(step, steps.Merge):
            self._merge(step, source, mirror)
        elif isinstance(step, steps.Publish):
            self._publish(step, source, mirror)

    def _finish(self, source: TableState, mirror: TableState, reason: str) -> None:
        self.result.finish(source, mirror)
        self.job.say("%s", f"done: {self.result.merges} change set(s) merged" if self.result.merges else reason)

    def _truncate(self) -> None:
        with Clock(self.result, "committing"):
            bid = boundary.close_change_set(self.job.catalog, self.opts.source_namespace, self.job.table,
                                            self.opts.run_id, self.result.mirror)
        self.result.truncated += 1
        self.job.say("closed the open change set: boundary snapshot %s", bid)

    def _advance(self, step: steps.Advance) -> None:
        with Clock(self.result, "committing"):
            self.job.catalog.set_checkpoint(self.opts.cow_namespace, self.job.mirror, step.target.wap_id,
                                            dict(step.properties))
        self.job.say("the source only rewrote files up to snapshot %s: checkpoint moved, nothing to merge",
                     step.target.snapshot_id)

    def _keep(self, step: steps.Keep) -> None:
        """--keep-mirror-changes: a commit of no file carrying the checkpoint makes the mirror's
        current state the job's (what the planner found is in the summary's notes)."""
        with Clock(self.result, "committing"):
            publish(self.job.catalog, self.opts.cow_namespace, self.job.mirror, None, step.target.wap_id)
        note = f"kept someone's change to the mirror as its content (--keep-mirror-changes): {step.reason}"
        self.result.notes.append(note)
        self.job.say("%s", note)

    def _merge(self, step: steps.Merge, source: TableState, mirror: TableState) -> None:
        """Read the change set, stage its write as core/pruning.py's choose_write says, publish it."""
        job = self.job
        if step.reason and not step.rebuild and step.reason not in self.result.notes:
            self.result.notes.append(step.reason)
        with Clock(self.result, "merging"):
            recreate = step.rebuild and bool(layout_change(source, mirror))
            created = job.mirror_table(self.path).prepare(mirror, step.rebuild, recreate)
            merge = replace(step, rebuild=created or step.rebuild)
        mirror = job.mirror_state()
        parent_rows = _live_rows(mirror)
        with self._change_set(merge, source, mirror) as (cs, summary):
            keys = None if summary is None else summary.keys
            shape = None if summary is None else self._shape(mirror, keys, cs, summary.counts)
            with Clock(self.result, "merging"):
                staged = job.writer.stage(cs, merge.target, mirror, self.path, shape, keys)
            rebuild = cs.rebuild
        counts = ChangeCounts(0, 0) if summary is None else summary.counts
        self._commit(merge, staged, counts, parent_rows, rebuild, "rebuilt mirror from" if rebuild else "merged")

    def _publish(self, step: steps.Publish, source: TableState, mirror: TableState) -> None:
        """Publish a write an earlier run staged; its change set is read again only for the audit's
        counts (a rebuild is audited from its own commit)."""
        merge, counts, rebuild = step.merge, ChangeCounts(0, 0), True
        if not merge.rebuild:
            with self._change_set(merge, source, mirror) as (cs, summary):
                rebuild = cs.rebuild
            counts = ChangeCounts(0, 0) if summary is None else summary.counts
        self._commit(merge, mirror.snapshot(step.staged_id), counts, _live_rows(mirror), rebuild, "published staged")

    def _commit(self, merge: steps.Merge, staged: Optional[Snapshot], counts: ChangeCounts, parent_rows: int,
                rebuild: bool, verb: str) -> None:
        with Clock(self.result, "committing"):
            try:
                if staged is not None:
                    self.job.writer.publish(staged, merge, counts, parent_rows, rebuild, self.path.fmt)
                else:
                    self.job.writer.nothing_staged(counts, merge, rebuild)
            except MirrorMovedError as moved:
                self.moved += 1
                if self.moved >= steps.MOVED_TRIES:
                    raise
                self.job.say("%s; planning again from the mirror as it is now", moved)
                return
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

