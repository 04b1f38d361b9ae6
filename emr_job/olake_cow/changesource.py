"""Where a mirror's change sets come from: one small interface, two implementations.

    TruncateBoundaries  truncate mode: the job truncates OLake's table to close each change set
                        (boundaries.py has the planning rules).
    SnapshotHistory     readonly mode: the job reads what changed between two snapshots of
                        OLake's table and never writes to it (history.py has the rules).

The planner (and the trigger's idle check) call `plan`/`describe`; the table job calls `read` to
get the change set of a Merge step, and maintenance calls `expiry_floor` to know which source
snapshots must stay. Planning is pure; `read` goes through the Spark adapter (`ChangeReader`).
"""
from typing import TYPE_CHECKING, List, Optional

from . import boundaries, history
from .errors import ResyncNeededError
from .modes import SourceMode
from .planner import Merge, Step
from .snapshots import Snapshot, TableState

if TYPE_CHECKING:  # the Spark adapter; never imported by the trigger Lambda
    from .change_reader import ChangeReader, ChangeSet


class ChangeSource:
    mode: SourceMode
    writes_source = False

    def plan(self, source: TableState, mirror: TableState, target_id: Optional[int] = None,
             may_close: bool = True) -> Step:
        raise NotImplementedError

    def describe(self, source: TableState, mirror: TableState) -> List[str]:
        raise NotImplementedError

    def expiry_floor(self, source: TableState, mirror: TableState) -> Optional[Snapshot]:
        """The oldest source snapshot that must survive source expiry (None: the mirror holds
        nothing of this source yet, so nothing may be expired)."""
        raise NotImplementedError

    def read(self, reader: "ChangeReader", step: Merge, source: TableState) -> "ChangeSet":
        raise NotImplementedError


class TruncateBoundaries(ChangeSource):
    mode = SourceMode.TRUNCATE
    writes_source = True

    def plan(self, source, mirror, target_id=None, may_close=True):
        return boundaries.plan(source, mirror, may_close)

    def describe(self, source, mirror):
        return boundaries.describe(source, mirror)

    def expiry_floor(self, source, mirror):
        # Change sets after the last merged boundary live only in the snapshots from it on.
        return boundaries.merged_boundary(source, mirror)

    def read(self, reader, step, source):
        if step.rebuild:
            return reader.rebuild(step.read_id)
        return reader.boundary_change_set(step.read_id, boundaries.dropped_delete_window(source, step.read_id))


class SnapshotHistory(ChangeSource):
    mode = SourceMode.READONLY

    def plan(self, source, mirror, target_id=None, may_close=True):
        return history.plan(source, mirror, target_id)

    def describe(self, source, mirror):
        return history.describe(source, mirror)

    def expiry_floor(self, source, mirror):
        return history.expiry_floor(source, mirror)

    def read(self, reader, step, source):
        if step.rebuild or step.since is None:
            return reader.rebuild(step.read_id, note=step.reason)
        try:
            rewrites = history.rewrite_candidates(source, step.since, step.target.snapshot_id)
            seqs = reader.rewrite_output_sequences(rewrites)
            intervals = history.intervals(source, step.since, step.target.snapshot_id, seqs)
            return reader.history_change_set(intervals)
        except ResyncNeededError as exc:
            # The source still holds the whole table: read it all rather than guess.
            return reader.rebuild(step.read_id, note=f"rebuilt from source snapshot {step.read_id}: {exc}")


_SOURCES = {SourceMode.TRUNCATE: TruncateBoundaries(), SourceMode.READONLY: SnapshotHistory()}


def for_mode(mode: SourceMode) -> ChangeSource:
    return _SOURCES[SourceMode(mode)]
