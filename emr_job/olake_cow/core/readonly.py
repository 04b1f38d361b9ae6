"""Readonly mode: change sets from the source's snapshot history (pure).

The mirror's checkpoint names the source snapshot C it holds and C's sequence number c. A run
fixes its target T (the source's current snapshot when it starts) and merges what changed between
C and T, reading only what the change needs:

* new rows: data files live at T whose data sequence number is above c, read with every delete of
  T applied (Iceberg's file scan tasks, staged as a task set);
* deleted keys: keys of equality-delete files above c; keys of rows of older files that newer
  position deletes or deletion vectors removed, and of older files that a content-changing commit
  removed (a `DELETE` that rewrote files): both found by comparing what those files showed before
  with what they show at T.

`replace` snapshots (another tool's rewrite_data_files, delete-file rewrites) do not change content.
Iceberg gives a rewrite's output files the sequence number of the snapshot the rewrite started
from (S), so every row in them is "as of S": the history is cut into intervals at such starting
points. Within an interval (A, B] a file is new when its sequence number is above A's, and a
rewrite's outputs are never new; files a rewrite wrote only from files the mirror already holds are
therefore never read again. Per key, the last interval that touches it decides; within one, the
newest visible row (by `_cdc_timestamp`, then `_olake_timestamp`) wins, and a key with no visible
row left is deleted.
"""
from dataclasses import dataclass
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

from .checkpoint import (
    OTHER_TRUNCATE_PROPERTY,
    Marker,
    changes_readonly_mirror,
    find_checkpoint,
    job_staged,
    marker_of,
    truncated_into,
)
from .errors import ResyncNeededError
from .identity import foreign_change, ground_problem, layout_change, restore_advice, state_ground
from .snapshots import Operation, Snapshot, TableState, ancestors
from .steps import NO_SNAPSHOTS, UP_TO_DATE, Advance, Blocked, Done, Merge, Properties, Publish, Step


@dataclass(frozen=True)
class _Position:
    target: Marker
    since: Optional[Marker]  # None: rebuild
    pending: Tuple[Snapshot, ...]  # ancestors of the target after the checkpoint, oldest first
    reason: str = ""  # why a rebuild
    repair: bool = False  # the mirror is rebuilt because its content cannot be trusted


def _position(source: TableState, mirror: TableState, target_id: Optional[int],
              rebuild_reason: Optional[str] = None) -> "_Position | Step":
    if not source.exists:
        return Blocked("the source table does not exist")
    if source.format_version < 2:
        return Blocked(f"the source table is format version {source.format_version}; readonly mode reads "
                       "sequence numbers, which need format version 2 or 3 (OLake writes version 2)")
    target_id = source.current_id if target_id is None else target_id
    if target_id is None:
        return Done(NO_SNAPSHOTS)
    target_snap = source.snapshot(target_id)
    if target_snap is None or target_snap.sequence_number is None:
        return Blocked(f"source snapshot {target_id} is not in the source's metadata any more")
    target = Marker(str(source.uuid), target_id, target_snap.sequence_number)
    chain, _ = ancestors(source, target_id)
    repair = rebuild_reason or foreign_change(mirror, source)
    if repair:
        return _Position(target, None, tuple(chain), repair, repair=True)
    return _from_checkpoint(source, find_checkpoint(mirror, source), target, tuple(chain))


def _from_checkpoint(source: TableState, checkpoint: Optional[Marker], target: Marker,
                     chain: Tuple[Snapshot, ...]) -> "_Position | Step":
    """Where the mirror's checkpoint stands in the target's ancestry."""
    if checkpoint is None:
        return _Position(target, None, chain, "first build")
    if checkpoint.source_uuid != source.uuid:
        return _Position(target, None, chain, "the source table was recreated")
    if checkpoint.sequence_number is None:
        return Blocked("the mirror's checkpoint names a truncate-mode boundary; it was not built in readonly mode")
    ids = [s.snapshot_id for s in chain]
    if checkpoint.snapshot_id in ids:
        return _Position(target, checkpoint, chain[ids.index(checkpoint.snapshot_id) + 1:])
    target_id, target_seq = target.snapshot_id, int(target.sequence_number or 0)
    if _merged_past(source, checkpoint.snapshot_id, target_id):
        return Done(f"the mirror already holds source snapshot {checkpoint.snapshot_id}, past this run's target "
                    f"{target_id}: another run merged it")
    if source.snapshot(checkpoint.snapshot_id) is not None or checkpoint.sequence_number >= target_seq:
        return _Position(target, None, chain,
                         f"the source's snapshot {target_id} does not descend from snapshot "
                         f"{checkpoint.snapshot_id} that the mirror holds (the source was rolled back)")
    if chain and chain[0].parent_id == checkpoint.snapshot_id:
        return _Position(target, checkpoint, chain)  # the checkpoint expired; everything after it is here
    return _Position(target, None, chain,
                     f"source snapshots between snapshot {checkpoint.snapshot_id} (held by the mirror) and "
                     f"{target_id} were expired, so what changed in between cannot be read")


def _merged_past(source: TableState, held_id: int, target_id: int) -> bool:
    """Whether the snapshot the mirror holds is in the source's current history and descends from the
    run's target (a run that started before another one published further; not a rollback)."""
    current = [s.snapshot_id for s in ancestors(source)[0]]
    return held_id in current and target_id in current[:current.index(held_id)]


def _unremovable(source: TableState, mirror: TableState) -> Optional[str]:
    """Why a mirror a rebuild must create anew (someone changed its columns or format version) cannot be
    dropped, from metadata alone (core/identity.py ground_problem: gc.enabled=false, folders outside
    its location or in OLake's): the drop purges every file. The job also checks what only its
    manifests show, before it drops."""
    change = layout_change(source, mirror)
    mine = state_ground(mirror, "the mirror")
    if change is None or mine is None:
        return None
    problem = ground_problem(mine, "dropping it to create it anew", state_ground(source))
    return None if problem is None else f"the mirror must be created anew ({change}), but {problem}"


def plan(source: TableState, mirror: TableState, target_id: Optional[int] = None,
         rebuild_reason: Optional[str] = None) -> Step:
    """The next step; `rebuild_reason`: why to rebuild the mirror whatever its checkpoint says."""
    pos = _position(source, mirror, target_id, rebuild_reason)
    if not isinstance(pos, _Position):
        return pos
    unremovable = _unremovable(source, mirror) if pos.since is None and mirror.exists else None
    if unremovable:
        return Blocked(unremovable)
    truncated = truncated_by_another(source, mirror) if pos.since is None and mirror.exists else ""
    if truncated:
        # A rebuild reads OLake's table as it is now: the rows that job moved out would be lost.
        return Blocked(f"this readonly mirror would be rebuilt from OLake's table ({pos.reason}), but another "
                       f"olake-cow job truncates that table in truncate mode ({truncated}): it no "
                       "longer holds the rows that job moved into its own mirror, so nothing was written. "
                       + (restore_advice(mirror) if pos.repair else _stuck_advice(source, mirror)))
    # A rebuild takes what the source holds now; an incremental merge keeps what a truncate moved out.
    record = _record_truncates(source, pos.pending) if pos.since is not None else ()
    merge = Merge(pos.target, pos.target.snapshot_id, pos.since is None, pos.since, pos.reason, record)
    staged = None if pos.repair else _staged_merge(source, mirror, pos, record)
    if staged is not None:
        return staged
    if pos.since is None:
        return merge
    if pos.since.snapshot_id == pos.target.snapshot_id or not any(s.changes_files for s in pos.pending):
        return Done(UP_TO_DATE)
    if not any(changes_readonly_mirror(s) for s in pos.pending):
        return Advance(pos.target, record)
    return merge


def _stuck_advice(source: TableState, mirror: TableState) -> str:
    """What a readonly mirror as the job left it can do when OLake's table no longer leads from the
    snapshot it holds (expired or rolled back) and another job's truncates keep a rebuild out: a
    rollback of the mirror changes nothing, dropping it loses the rows only it and that job hold."""
    into, held = truncated_into(source), find_checkpoint(mirror, source)
    copy = f"That job's mirror {into}" if into else "That job's mirror"
    back = f"snapshot {held.snapshot_id} or one after it" if held is not None else "the snapshot this mirror holds"
    return ("The mirror keeps every row it holds, as the job left it, but cannot be merged further while OLake's "
            f"table does not lead from the snapshot it holds. {copy} is the table's complete copy: read it. Do "
            "not drop the mirror (a rebuild would lack those rows). If someone rolled OLake's table back, set it "
            f"to {back}; if its snapshots were expired, keep them longer than this mirror lags (the truncating "
            "job's --expire-source-older-than does not wait for this mirror)")


def other_truncates(source: TableState, mirror: TableState) -> List[int]:
    """Truncates another olake-cow job made on the source, oldest first: those in its current
    history, and the newest the mirror went past (recorded on it: snapshot expiry removes them from
    the history, not from what the mirror holds)."""
    seen = [s.snapshot_id for s in ancestors(source)[0] if s.is_boundary]
    uuid, _, snapshot = mirror.properties.get(OTHER_TRUNCATE_PROPERTY, "").partition("/")
    if uuid == str(source.uuid) and snapshot.isdigit() and int(snapshot) not in seen:
        seen.insert(0, int(snapshot))
    return seen


def truncated_by_another(source: TableState, mirror: TableState) -> str:
    """Where another olake-cow job's truncates of the source show ("": nowhere): the newest in the
    source's history or recorded on the mirror, else the mark that job leaves on OLake's table (it
    outlives expiry of truncates the mirror never went past)."""
    seen = other_truncates(source, mirror)
    if seen:
        return f"source snapshot {seen[-1]}"
    into = truncated_into(source)
    return f"into its mirror {into}" if into else ""


def other_truncates_note(source: TableState, mirror: TableState, name: str) -> Optional[str]:
    """The note a readonly run of source `name` gives when another olake-cow job truncates it: the
    mirror keeps the rows those truncates removed (None: no other job does)."""
    where = truncated_by_another(source, mirror)
    if not where:
        return None
    return (f"another olake-cow job truncates {name} in truncate mode ({where}): this "
            "readonly mirror keeps the rows those truncates removed")


def _record_truncates(source: TableState, pending: Sequence[Snapshot]) -> Properties:
    """The property recording the newest truncate by another job among the snapshots the mirror
    goes past (none: nothing to record)."""
    passed = [s.snapshot_id for s in pending if s.is_boundary]
    return ((OTHER_TRUNCATE_PROPERTY, f"{source.uuid}/{passed[-1]}"),) if passed else ()


def _staged_merge(source: TableState, mirror: TableState, pos: _Position, record: Properties) -> Optional[Publish]:
    """A merge an earlier run staged (and recorded) on the mirror's current snapshot, for a source
    snapshot between the checkpoint and the target: publish it instead of redoing it."""
    reachable = {s.snapshot_id: s for s in pos.pending}
    for snap in job_staged(mirror):
        m = marker_of(snap)
        if (m is None or snap.parent_id != mirror.current_id or m.source_uuid != source.uuid
                or m.sequence_number is None or m.snapshot_id not in reachable):
            continue
        return Publish(snap.snapshot_id, Merge(m, m.snapshot_id, pos.since is None, pos.since, pos.reason, record))
    return None


def describe(source: TableState, mirror: TableState, rebuild_reason: Optional[str] = None) -> List[str]:
    step = plan(source, mirror, rebuild_reason=rebuild_reason)
    if isinstance(step, Blocked):
        return [f"blocked: {step.reason}"]
    if isinstance(step, Done):
        return [step.reason]
    if isinstance(step, Advance):
        return [f"move the checkpoint to source snapshot {step.target.snapshot_id} (the source only "
                "rewrote files since; the mirror's data is already right)"]
    if isinstance(step, Publish):
        lines = [f"publish staged mirror snapshot {step.staged_id} (source snapshot "
                 f"{step.merge.target.snapshot_id}) after audit"]
        if step.merge.target.snapshot_id != source.current_id:
            lines.append(f"then merge what changed up to source snapshot {source.current_id}")
        return lines
    assert isinstance(step, Merge)
    if step.rebuild:
        return [f"rebuild the mirror from source snapshot {step.read_id} ({step.reason}); the source is only read"]
    pending = _pending(source, step.since, step.read_id)
    changing = [s for s in pending if changes_readonly_mirror(s)]
    rewrites = [s for s in pending if s.changes_files and not changes_readonly_mirror(s)]
    since = step.since.snapshot_id if step.since else "-"
    return [f"merge what changed between source snapshots {since} and {step.read_id}: {len(changing)} "
            "commit(s) that change data" + (f", {len(rewrites)} file rewrite(s) (not re-read)" if rewrites else "")
            + "; the source is only read"]


def _pending(source: TableState, since: Optional[Marker], target_id: Optional[int]) -> List[Snapshot]:
    chain, _ = ancestors(source, target_id)
    ids = [s.snapshot_id for s in chain]
    if since is not None and since.snapshot_id in ids:
        return chain[ids.index(since.snapshot_id) + 1:]
    return chain


# --- intervals of an incremental merge ---------------------------------------------------------
@dataclass(frozen=True)
class Interval:
    """Changes in (start, end]: files with a data sequence number above `start_seq` are new.
    `start_id` is None when that snapshot is no longer in the source's metadata (expired): what
    older files showed before can then not be read. `removing`: snapshots in the interval that
    change content and removed data files (a copy-on-write DELETE, a truncate by someone)."""

    start_id: Optional[int]
    start_seq: int
    end_id: int
    removing: Tuple[int, ...] = ()


def rewrite_candidates(source: TableState, since: Marker, target_id: int) -> List[Snapshot]:
    """The `replace` snapshots between checkpoint and target that wrote data files: the adapter
    reads the sequence number of their output files for `intervals`."""
    return [s for s in _pending(source, since, target_id)
            if s.operation == Operation.REPLACE.value and s.adds_files]


def intervals(source: TableState, since: Marker, target_id: int,
              rewrite_seqs: Mapping[int, int]) -> List[Interval]:
    """Cut (since, target] at the starting points of rewrites whose outputs are newer than the
    checkpoint. `rewrite_seqs`: replace snapshot id -> data sequence number of its output files.
    Raises ResyncNeededError when a rewrite's starting snapshot cannot be found."""
    assert since.sequence_number is not None
    chain, _ = ancestors(source, target_id)
    by_seq = {s.sequence_number: s for s in chain if s.sequence_number is not None}
    pending = _pending(source, since, target_id)
    start_id: Optional[int] = since.snapshot_id if source.snapshot(since.snapshot_id) else None
    cuts: Dict[int, Tuple[int, int]] = {}  # next start seq -> (end of the previous interval, next start id)
    for snap in pending:
        if snap.is_boundary and snap.parent_id is not None and snap.sequence_number is not None:
            # Another job's truncate: what was new before it is read where it was still live.
            cuts[snap.sequence_number] = (snap.parent_id, snap.snapshot_id)
            continue
        seq = rewrite_seqs.get(snap.snapshot_id)
        if snap.operation != Operation.REPLACE.value or seq is None or seq <= since.sequence_number:
            continue
        started = by_seq.get(seq)
        if started is None:
            raise ResyncNeededError(f"rewrite snapshot {snap.snapshot_id} started from a snapshot with sequence "
                                    f"number {seq} that is not in the source's history")
        if started.snapshot_id == snap.snapshot_id:
            # A rewrite that kept no starting sequence number: its outputs are as of its parent.
            if snap.parent_id is None:
                raise ResyncNeededError(f"rewrite snapshot {snap.snapshot_id} has no parent")
            cuts.setdefault(seq, (snap.parent_id, snap.snapshot_id))  # a truncate's cut there reads more
        else:
            cuts.setdefault(seq, (started.snapshot_id, started.snapshot_id))
    out: List[Optional[Interval]] = []
    start_seq = since.sequence_number
    pending_ids = [s.snapshot_id for s in pending]
    for next_seq in sorted(cuts):
        end_id, next_start = cuts[next_seq]
        out.append(_interval(source, pending, pending_ids, start_id, start_seq, end_id))
        start_id, start_seq = next_start, next_seq
    out.append(_interval(source, pending, pending_ids, start_id, start_seq, target_id))
    return [iv for iv in out if iv is not None and _changes(pending, pending_ids, iv)]



def _span(pending: Sequence[Snapshot], pending_ids: List[int], start_seq: int, end_id: int) -> List[Snapshot]:
    end = pending_ids.index(end_id) if end_id in pending_ids else -1
    return [s for s in pending[:end + 1] if s.sequence_number is not None and s.sequence_number > start_seq]


def _interval(source: TableState, pending: Sequence[Snapshot], pending_ids: List[int], start_id: Optional[int],
              start_seq: int, end_id: int) -> Optional[Interval]:
    if end_id not in pending_ids:
        return None  # the interval ends where it starts
    span = _span(pending, pending_ids, start_seq, end_id)
    removing = tuple(s.snapshot_id for s in span if changes_readonly_mirror(s) and s.removes_data_files)
    if start_id is not None and source.snapshot(start_id) is None:
        start_id = None
    return Interval(start_id, start_seq, end_id, removing)


def _changes(pending: Sequence[Snapshot], pending_ids: List[int], iv: Interval) -> bool:
    return any(changes_readonly_mirror(s) for s in _span(pending, pending_ids, iv.start_seq, iv.end_id))


def expiry_floor(source: TableState, mirror: TableState) -> Optional[Snapshot]:
    """The oldest source snapshot a readonly mirror still needs: the one it holds (the next run
    reads from it, and --verify compares against it). None when it holds nothing of this source."""
    checkpoint = find_checkpoint(mirror, source)
    if checkpoint is None or checkpoint.source_uuid != source.uuid or checkpoint.sequence_number is None:
        return None
    return source.snapshot(checkpoint.snapshot_id)
