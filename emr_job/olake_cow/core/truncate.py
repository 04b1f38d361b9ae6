"""Truncate mode: change sets closed by boundaries (pure).

Source history, oldest first:  s1 s2 s3 T1 s4 s5 T2 s6
  T* are boundaries (truncates made by the job, marked `olake-cow.boundary`). The parent of a
  boundary holds exactly one change set: everything written since the previous boundary. The
  mirror's checkpoint names the newest boundary whose change set it holds. Boundaries after it are
  merged in order; changes after the last boundary (s6) are closed by a new truncate first, at most
  once per run, so a source that never stops committing cannot keep a run busy.
"""
from dataclasses import dataclass
from typing import List, Optional, Tuple, Union

from .checkpoint import Marker, find_checkpoint, staged_for
from .identity import foreign_change
from .snapshots import Snapshot, Summary, TableState, ancestors
from .steps import LEFT_FOR_NEXT_RUN, NO_SNAPSHOTS, UP_TO_DATE, Blocked, Done, Merge, Publish, Step, Truncate


@dataclass(frozen=True)
class _Position:
    pending: Tuple[Snapshot, ...]
    rebuild: bool
    open_changes: bool


def _position(source: TableState, mirror: TableState) -> Union[_Position, Blocked]:
    chain, complete = ancestors(source)
    checkpoint = find_checkpoint(mirror)
    if checkpoint is not None and (checkpoint.source_uuid != source.uuid or checkpoint.sequence_number is not None):
        checkpoint = None  # the source was dropped and recreated: rebuild from the new table
    ids = [s.snapshot_id for s in chain]
    if checkpoint is not None:
        if checkpoint.snapshot_id in ids:
            start = ids.index(checkpoint.snapshot_id) + 1
        elif chain and chain[0].parent_id == checkpoint.snapshot_id:
            start = 0  # the checkpoint itself was expired; everything after it is intact
        else:
            return Blocked(
                f"the mirror's checkpoint (source boundary snapshot {checkpoint.snapshot_id}) is not "
                "in the source's current history: the source was rolled back or its snapshots were "
                "expired past the checkpoint; rebuild the mirror by dropping it")
        rebuild = False
    else:
        if not complete and any(s.is_boundary for s in chain):
            return Blocked(
                "the mirror has no checkpoint for this source table and the source's history before "
                f"snapshot {chain[0].snapshot_id} was expired, so earlier change sets are gone; "
                "the mirror cannot be rebuilt from the source")
        start = 0
        rebuild = True
    rest = chain[start:]
    pending = tuple(s for s in rest if s.is_boundary)
    after_last = rest[rest.index(pending[-1]) + 1:] if pending else rest
    by_id = source.by_id()
    for b in pending:
        if b.parent_id is not None and b.parent_id not in by_id:
            return Blocked(f"the change set of boundary {b.snapshot_id} (snapshot {b.parent_id}) "
                           "was expired before it was merged")
    open_changes = any(s.adds_files for s in after_last)
    return _Position(pending, rebuild, open_changes)


def plan(source: TableState, mirror: TableState, may_close: bool = True, rebuild: Optional[str] = None) -> Step:
    if not source.exists:
        return Blocked("the source table does not exist")
    repair = rebuild or foreign_change(mirror)
    if repair:
        return Blocked(f"{repair}. In truncate mode OLake's table holds only the changes since the last run and the "
                       "mirror is the only complete copy, so it is not rebuilt: roll the mirror back to the job's "
                       "last snapshot, or copy it elsewhere, drop it and have OLake re-sync the table (full refresh)")
    pos = _position(source, mirror)
    if isinstance(pos, Blocked):
        return pos
    if pos.pending:
        b = pos.pending[0]
        merge = Merge(Marker(str(source.uuid), b.snapshot_id), b.parent_id, pos.rebuild)
        for staged in staged_for(mirror, merge.target):
            if staged.parent_id == mirror.current_id:
                return Publish(staged.snapshot_id, merge)
        return merge
    if pos.open_changes:
        return Truncate() if may_close else Done(LEFT_FOR_NEXT_RUN)
    if source.current_id is None:
        return Done(NO_SNAPSHOTS)
    return Done(UP_TO_DATE)


def describe(source: TableState, mirror: TableState, rebuild: Optional[str] = None) -> List[str]:
    first = plan(source, mirror, rebuild=rebuild)
    if isinstance(first, Blocked):
        return [f"blocked: {first.reason}"]
    pos = _position(source, mirror)
    if isinstance(pos, Blocked):
        return [f"blocked: {pos.reason}"]
    lines = []
    rebuilds = pos.rebuild
    for i, b in enumerate(pos.pending):
        verb = "rebuild the mirror from" if rebuilds else "merge"
        if i == 0 and isinstance(first, Publish):
            lines.append(f"publish staged mirror snapshot {first.staged_id} "
                         f"(boundary {b.snapshot_id}) after audit")
        else:
            lines.append(f"{verb} change set of boundary {b.snapshot_id} (source snapshot {b.parent_id})")
        rebuilds = False
    if pos.open_changes:
        lines.append("truncate the source to close the open change set (new boundary)")
        lines.append(("rebuild the mirror from" if rebuilds else "merge") + " that change set")
    if not lines:
        lines.append(first.reason if isinstance(first, Done) else "nothing to do")
    return lines


def merged_boundary(source: TableState, mirror: TableState) -> Optional[Snapshot]:
    """The newest boundary the mirror holds, if it is still in the source's metadata."""
    checkpoint = find_checkpoint(mirror)
    if checkpoint is None or checkpoint.source_uuid != source.uuid or checkpoint.sequence_number is not None:
        return None
    return source.snapshot(checkpoint.snapshot_id)


def dropped_delete_window(source: TableState, read_id: Optional[int]) -> Tuple[int, ...]:
    """Snapshots of the change set ending at `read_id` (back to the previous boundary), when one of
    them removed delete files: another tool's rewrite drops equality-delete files older than every
    data file left, but in truncate mode those deletes are for rows only the mirror holds, so the
    change set must read them from the snapshots that added them. Empty when nothing was dropped
    (the delete files live at `read_id` are then the whole change set's)."""
    by_id = source.by_id()
    window: List[int] = []
    current = by_id.get(read_id) if read_id is not None else None
    while current is not None and not current.is_boundary:
        window.append(current.snapshot_id)
        current = by_id.get(current.parent_id) if current.parent_id is not None else None
    dropped = any(by_id[s].summary_int(Summary.REMOVED_DELETE_FILES) > 0 for s in window)
    return tuple(window) if dropped else ()

