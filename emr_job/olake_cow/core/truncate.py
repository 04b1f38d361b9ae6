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

from .checkpoint import TRUNCATED_INTO_PROPERTY, Marker, find_checkpoint, job_staged, truncated_into
from .identity import changes_on_publish, foreign_change, mirror_ground_problem, restore_advice
from .snapshots import FIRST_BOUNDARY_KEY, Snapshot, Summary, TableState, ancestors
from .steps import LEFT_FOR_NEXT_RUN, NO_SNAPSHOTS, UP_TO_DATE, Blocked, Done, Keep, Merge, Publish, Step, Truncate


@dataclass(frozen=True)
class _Position:
    pending: Tuple[Snapshot, ...]
    rebuild: bool
    open_changes: bool


def _position(source: TableState, mirror: TableState, resume: bool = False) -> Union[_Position, Blocked]:
    chain, complete = ancestors(source)
    start = _start(source, mirror, chain, complete, resume)
    if isinstance(start, Blocked):
        return start
    rest, rebuild = chain[start[0]:], start[1]
    by_id = source.by_id()
    pending = tuple(s for s in rest if s.is_boundary and (not resume or s.parent_id in by_id))
    after_last = rest[rest.index(pending[-1]) + 1:] if pending else rest
    for b in pending:
        if b.parent_id is not None and b.parent_id not in by_id:
            return Blocked(f"the change set of boundary {b.snapshot_id} (snapshot {b.parent_id}) was expired before "
                           "it was merged. Nothing was written or truncated, and the mirror keeps every row it "
                           "holds. Run once with --resume-from-source: it merges the change sets OLake's table still "
                           "holds (that one's changes are missed, and the summary says so)")
    return _Position(pending, rebuild, any(s.adds_files for s in after_last))


def _start(source: TableState, mirror: TableState, chain: List[Snapshot], complete: bool,
           resume: bool) -> Union[Tuple[int, bool], Blocked]:
    """(where in the source's history the mirror's next change sets begin, whether it is rebuilt)."""
    checkpoint = find_checkpoint(mirror)
    if checkpoint is not None and (checkpoint.source_uuid != source.uuid or checkpoint.sequence_number is not None):
        checkpoint = None  # the source was dropped and recreated: rebuild from the new table
    if checkpoint is None:
        if not complete and not _holds_every_row(source, chain):
            return Blocked(_unbuildable(source, chain))
        return 0, True
    ids = [s.snapshot_id for s in chain]
    if checkpoint.snapshot_id in ids:
        return ids.index(checkpoint.snapshot_id) + 1, False
    if (chain and chain[0].parent_id == checkpoint.snapshot_id) or (
            resume and source.snapshot(checkpoint.snapshot_id) is None):
        return 0, False  # the checkpoint was expired; everything after it that is left is merged
    return Blocked(_lost_checkpoint(source, checkpoint.snapshot_id))


def _holds_every_row(source: TableState, chain: List[Snapshot]) -> bool:
    """Whether a build from what is left of the source's expired history holds every row OLake
    wrote: no truncate came before it (none is left in it and OLake's table carries no truncate-mode
    mark, which outlives the expiry), or the earliest boundary left is the table's first truncate and
    the snapshot it was planned on is still there (a truncate whose commit Iceberg retried onto
    another job's boundary is then seen, not taken for the first)."""
    boundaries = [s for s in chain if s.is_boundary]
    if not boundaries:
        return not truncated_into(source)
    earliest = chain.index(boundaries[0])
    after = boundaries[0].summary.get(FIRST_BOUNDARY_KEY)
    return after is not None and after in {str(s.snapshot_id) for s in chain[:earliest]}


def _unbuildable(source: TableState, chain: List[Snapshot]) -> str:
    """Why no mirror is built now, and what to do: earlier truncates moved rows out of OLake's table
    and the snapshots that held them were expired."""
    into = truncated_into(source)
    whose = f"its mirror {into}" if into else "its mirror"
    return (f"the mirror has no checkpoint (it is missing or was made anew), OLake's table has been truncated into "
            f"{whose}, and its snapshots before {chain[0].snapshot_id} were expired: rows a truncate moved out before "
            "then are in no snapshot left, so a mirror built now could lack them. Nothing was written or truncated. "
            "If the mirror was dropped, restore it under its name (a table dropped without purge keeps its files: "
            "register its last metadata file), then run again; if OLake has re-synced the table in full since, "
            f"remove its mark (ALTER TABLE <OLake's table> UNSET TBLPROPERTIES ('{TRUNCATED_INTO_PROPERTY}')), then "
            "run again")


def first_truncate_base(source: TableState) -> Optional[int]:
    """The source snapshot a truncate planned now closes on, when no truncate came before it (no
    boundary in its history, and that history whole or OLake's table without the truncate-mode
    mark); else None."""
    chain, complete = ancestors(source)
    if any(s.is_boundary for s in chain) or (not complete and truncated_into(source)):
        return None
    return source.current_id


def _lost_checkpoint(source: TableState, checkpoint_id: int) -> str:
    head = f"the mirror's checkpoint (source boundary snapshot {checkpoint_id}) is not in the source's current history"
    if source.snapshot(checkpoint_id) is not None:
        return (f"{head}: the source was rolled back past it. Nothing was written or truncated, and the mirror keeps "
                f"every row it holds: roll OLake's table forward again (its snapshot {checkpoint_id} is still there), "
                "then run again")
    return (f"{head}: the source's snapshots were expired past it, so the changes in between cannot be read. Nothing "
            "was written or truncated, and the mirror keeps every row it holds. Run once with --resume-from-source: "
            "it merges what OLake's table still holds into the mirror (only changes OLake's table no longer holds "
            "are missed, and the summary says so)")


def plan(source: TableState, mirror: TableState, may_close: bool = True, rebuild_reason: Optional[str] = None,
         resume: bool = False, keep: bool = False) -> Step:
    """`resume`: merge what the source still holds when the change sets after the mirror's
    checkpoint were expired (--resume-from-source), instead of stopping. `keep`: keep commits
    someone made on top of the job's last publish as the mirror's content (--keep-mirror-changes)."""
    if not source.exists:
        return Blocked("the source table does not exist")
    repair = rebuild_reason or foreign_change(mirror, source)
    if repair:
        return _changed_mirror(source, mirror, repair, bool(rebuild_reason), keep)
    ground = mirror_ground_problem(source, mirror)
    if ground:
        return Blocked(f"{ground}, and in truncate mode the mirror is the only complete copy: nothing was written or "
                       "truncated. Unset that property (or set the mirror's location back) and run again; files the "
                       "mirror already keeps there are safe from this job's orphan removal, not from others'")
    pos = _position(source, mirror, resume)
    if isinstance(pos, Blocked):
        return pos
    if pos.pending:
        b = pos.pending[0]
        resumed = resume and not pos.rebuild and _position(source, mirror) != pos
        merge = Merge(Marker(str(source.uuid), b.snapshot_id), b.parent_id, pos.rebuild,
                      reason=RESUMED if resumed else "")
        for staged in job_staged(mirror, merge.target):
            if staged.parent_id == mirror.current_id:
                return Publish(staged.snapshot_id, merge)
        return merge
    if pos.open_changes:
        return Truncate(first_truncate_base(source)) if may_close else Done(LEFT_FOR_NEXT_RUN)
    if source.current_id is None:
        return Done(NO_SNAPSHOTS)
    return Done(UP_TO_DATE)


RESUMED = ("resumed from what OLake's table still holds (--resume-from-source): changes in source snapshots that "
           "were expired before they were merged are not in the mirror")


def _changed_mirror(source: TableState, mirror: TableState, repair: str, rebuild: bool, keep: bool) -> Step:
    """A truncate mirror (the only complete copy) not as the job left it (`repair`) is never rebuilt:
    refused, or, when asked (`keep`), commits someone made on the job's last publish are kept."""
    kept = None if rebuild else changes_on_publish(mirror, source)
    checkpoint = find_checkpoint(mirror) if keep and kept else None
    if kept and checkpoint is not None:
        return Keep(checkpoint, kept)
    may_keep = (". Or, to keep that change as the mirror's content (it was made on the job's last commit), run "
                "once with --keep-mirror-changes") if kept else ""
    return Blocked(f"{repair}. In truncate mode OLake's table holds only the changes since the last run and the "
                   "mirror is the only complete copy, so it is not rebuilt: nothing was written or truncated. "
                   + restore_advice(mirror) + may_keep)


def describe(source: TableState, mirror: TableState, rebuild_reason: Optional[str] = None,
             resume: bool = False, keep: bool = False) -> List[str]:
    first = plan(source, mirror, rebuild_reason=rebuild_reason, resume=resume, keep=keep)
    if isinstance(first, Blocked):
        return [f"blocked: {first.reason}"]
    pos = _position(source, mirror, resume)
    if isinstance(pos, Blocked):
        return [f"blocked: {pos.reason}"]
    lines = [f"keep someone's change to the mirror as its content ({first.reason})"] if isinstance(first, Keep) else []
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

