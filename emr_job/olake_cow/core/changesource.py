"""Where a mirror's change sets come from: one small interface, one implementation per source mode.

    TruncateSource  truncate mode: the job truncates OLake's table to close each change set
                    (truncate.py has the planning rules).
    ReadonlySource  readonly mode: the job reads what changed between two snapshots of OLake's
                    table and never writes to it (readonly.py has the rules).

The planner (and the trigger's idle check) call `plan`/`describe`; the table job calls `read` to
get the change set of a Merge step, and maintenance calls `expiry_floor` to know which source
snapshots must stay. Planning is pure; `read` goes through a reader of the source table, one per
mode (ReadsBoundaries, ReadsHistory; the Spark classes of spark/boundary_reader.py and
spark/history_reader.py implement them, and spark/paths.py pairs each with its mode, checked by mypy).
"""
from typing import Any, Dict, Generic, List, Optional, Protocol, Sequence, TypeVar

from . import readonly, truncate
from .errors import ResyncNeededError
from .modes import SourceMode
from .readonly import Interval
from .snapshots import Snapshot, TableState
from .steps import Merge, Step


class ReadsSnapshots(Protocol):
    """Reads every row of one source snapshot (first build, recreated source, resync)."""

    def rebuild(self, snapshot_id: Optional[int], note: str = "") -> Any: ...


class ReadsBoundaries(ReadsSnapshots, Protocol):
    """Truncate mode: reads the change set a boundary closed."""

    def boundary_change_set(self, snapshot_id: Optional[int], dropped_window: Sequence[int] = ()) -> Any: ...


class ReadsHistory(ReadsSnapshots, Protocol):
    """Readonly mode: reads what changed between two snapshots, interval by interval."""

    def rewrite_output_sequences(self, rewrites: Sequence[Snapshot]) -> Dict[int, int]: ...

    def history_change_set(self, intervals: Sequence[Interval]) -> Any: ...


R = TypeVar("R", bound=ReadsSnapshots, contravariant=True)


class ChangeSource(Generic[R]):
    """Where a mirror's change sets come from, for one source mode: the next step to take, the
    change set a Merge step reads (through a reader of type R), and which source snapshots must
    survive expiry."""

    mode: SourceMode
    writes_source = False

    def plan(self, source: TableState, mirror: TableState, target_id: Optional[int] = None,
             may_close: bool = True, rebuild_reason: Optional[str] = None, resume: bool = False,
             keep: bool = False) -> Step:
        """The next step. `rebuild_reason`: why the mirror must be rebuilt whatever its checkpoint says
        (a mirror someone else changed is found by the planners themselves, identity.py). `resume`:
        merge what the source still holds past expired change sets (truncate mode). `keep`: keep
        someone's commits on the job's last publish as the mirror's content (truncate mode)."""
        raise NotImplementedError

    def describe(self, source: TableState, mirror: TableState, rebuild_reason: Optional[str] = None,
                 resume: bool = False, keep: bool = False) -> List[str]:
        raise NotImplementedError

    def expiry_floor(self, source: TableState, mirror: TableState) -> Optional[Snapshot]:
        """The oldest source snapshot that must survive source expiry (None: the mirror holds
        nothing of this source yet, so nothing may be expired)."""
        raise NotImplementedError

    def read(self, reader: R, step: Merge, source: TableState) -> Any:
        raise NotImplementedError


class TruncateSource(ChangeSource[ReadsBoundaries]):
    mode = SourceMode.TRUNCATE
    writes_source = True

    def plan(self, source: TableState, mirror: TableState, target_id: Optional[int] = None,
             may_close: bool = True, rebuild_reason: Optional[str] = None, resume: bool = False,
             keep: bool = False) -> Step:
        return truncate.plan(source, mirror, may_close, rebuild_reason, resume, keep)

    def describe(self, source: TableState, mirror: TableState, rebuild_reason: Optional[str] = None,
                 resume: bool = False, keep: bool = False) -> List[str]:
        return truncate.describe(source, mirror, rebuild_reason, resume, keep)

    def expiry_floor(self, source: TableState, mirror: TableState) -> Optional[Snapshot]:
        # Change sets after the last merged boundary live only in the snapshots from it on.
        return truncate.merged_boundary(source, mirror)

    def read(self, reader: ReadsBoundaries, step: Merge, source: TableState) -> Any:
        if step.rebuild:
            return reader.rebuild(step.read_id)
        return reader.boundary_change_set(step.read_id, truncate.dropped_delete_window(source, step.read_id))


class ReadonlySource(ChangeSource[ReadsHistory]):
    mode = SourceMode.READONLY

    def plan(self, source: TableState, mirror: TableState, target_id: Optional[int] = None,
             may_close: bool = True, rebuild_reason: Optional[str] = None, resume: bool = False,
             keep: bool = False) -> Step:
        return readonly.plan(source, mirror, target_id, rebuild_reason)

    def describe(self, source: TableState, mirror: TableState, rebuild_reason: Optional[str] = None,
                 resume: bool = False, keep: bool = False) -> List[str]:
        return readonly.describe(source, mirror, rebuild_reason)

    def expiry_floor(self, source: TableState, mirror: TableState) -> Optional[Snapshot]:
        return readonly.expiry_floor(source, mirror)

    def read(self, reader: ReadsHistory, step: Merge, source: TableState) -> Any:
        if step.rebuild or step.since is None:
            return reader.rebuild(step.read_id, note=step.reason)
        try:
            rewrites = readonly.rewrite_candidates(source, step.since, step.target.snapshot_id)
            seqs = reader.rewrite_output_sequences(rewrites)
            intervals = readonly.intervals(source, step.since, step.target.snapshot_id, seqs)
            return reader.history_change_set(intervals)
        except ResyncNeededError as exc:
            # The source still holds the whole table: read it all rather than guess.
            return reader.rebuild(step.read_id, note=f"rebuilt from source snapshot {step.read_id}: {exc}")


_SOURCES: Dict[SourceMode, ChangeSource[Any]] = {SourceMode.TRUNCATE: TruncateSource(),
                                                 SourceMode.READONLY: ReadonlySource()}


def for_mode(mode: SourceMode) -> ChangeSource[Any]:
    return _SOURCES[SourceMode(mode)]
