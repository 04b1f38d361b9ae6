"""The mirror's checkpoint: which source snapshot its current content corresponds to.

Every mirror commit is staged under a WAP id that names the source table and snapshot:
  truncate mode  `olake-cow:<source-uuid>:<boundary-id>`        (the boundary truncate)
  readonly mode  `olake-cow:<source-uuid>:<snapshot-id>:<seq>`  (the source snapshot and its
                                                                 sequence number)
The published snapshot carries the marker in its summary (`wap.id` after a fast-forward,
`published-wap-id` after a cherry-pick), and the publish sets the same value as the table property
`olake-cow.checkpoint` in the same commit; the property survives mirror snapshot expiry and
maintenance commits. The checkpoint is the newest of the two (by source sequence number when both
carry one, else the snapshot marker), the property only where the job could have moved it alone:
past source snapshots that change nothing (a merge that changes no row is still a commit, of no
file). Replaying changes from an older checkpoint is harmless (merges are idempotent and applied
in order), so a checkpoint that lags never loses data; one that runs ahead would.
"""
from dataclasses import dataclass
from typing import Dict, List, Mapping, Optional

from .snapshots import Snapshot, Summary, TableState, ancestors, exact_rows

WAP_PREFIX = "olake-cow"
CHECKPOINT_PROPERTY = "olake-cow.checkpoint"
# The marker of the data the mirror's current snapshot holds: set with every publish, never alone
# (identity.py reads it to tell the job's own checkpoint moves from a rollback of the mirror).
DATA_CHECKPOINT_PROPERTY = "olake-cow.data-checkpoint"
# The id of the snapshot that publish made current (a cherry-pick that cannot fast-forward names it
# as its source snapshot), set with the data checkpoint: anyone can stage a commit under the job's WAP
# id and publish it, so a marker alone does not make a snapshot the job's.
DATA_SNAPSHOT_PROPERTY = "olake-cow.data-snapshot"
# The id of the snapshot the Spark engine staged last, set right after it staged it: a later run
# publishes a staged snapshot only when it is this one, never one someone staged under the job's id.
STAGED_PROPERTY = "olake-cow.staged-snapshot"
# The rows the published snapshot shows, set with it when its summary tells them exactly (exact_rows:
# no delete file, or only deletion vectors; else "unknown"): a rewrite keeps them, so a compaction of
# someone's delete, with the job's snapshots expired, still shows.
DATA_ROWS_PROPERTY = "olake-cow.data-rows"
SOURCE_PROPERTY = "olake-cow.source-table"
MODE_PROPERTY = "olake-cow.source-mode"  # readonly | truncate: how the mirror was built
FORMAT_PROPERTY = "olake-cow.mirror-format"  # cow | dv
# Readonly mirrors: "<source uuid>/<snapshot id>" of the newest truncate another olake-cow job made
# on the source that this mirror went past (set with the checkpoint). It outlives the source's
# snapshot expiry, which removes the truncate from the history a rebuild is judged by (readonly.py).
OTHER_TRUNCATE_PROPERTY = "olake-cow.source-truncated-at"
# On OLake's table, set by a truncate-mode job with each truncate: "<namespace>.<table>" of its mirror,
# the only complete copy. It outlives the source's snapshot expiry, so no other mirror is ever first
# built, or rebuilt, from a table that job emptied (modes.py, readonly.py).
TRUNCATED_INTO_PROPERTY = "olake-cow.truncated-into"
# Staged snapshots that failed their audit: never published, never picked up again.
REJECTED_PROPERTY = "olake-cow.rejected-snapshots"
REJECTED_KEPT = 20
MARKER_KEYS = (Summary.WAP_ID, Summary.PUBLISHED_WAP_ID)


def truncated_into(source: TableState) -> str:
    """The mirror a truncate-mode job moves OLake's rows into, as it records it on OLake's table
    ("": none does)."""
    return source.properties.get(TRUNCATED_INTO_PROPERTY, "") if source.exists else ""


@dataclass(frozen=True)
class Marker:
    source_uuid: str
    snapshot_id: int  # truncate mode: the boundary; readonly mode: the source snapshot merged
    sequence_number: Optional[int] = None  # readonly mode: the source snapshot's sequence number

    @property
    def wap_id(self) -> str:
        base = f"{WAP_PREFIX}:{self.source_uuid}:{self.snapshot_id}"
        return base if self.sequence_number is None else f"{base}:{self.sequence_number}"


def parse_marker(value: Optional[str]) -> Optional[Marker]:
    """Strict parser: anything that is not exactly one of our formats is not a checkpoint."""
    if not value:
        return None
    parts = value.split(":")
    if len(parts) not in (3, 4) or parts[0] != WAP_PREFIX or not parts[1]:
        return None
    try:
        seq = int(parts[3]) if len(parts) == 4 else None
        return Marker(parts[1], int(parts[2]), seq)
    except ValueError:
        return None


def marker_of(snap: Snapshot) -> Optional[Marker]:
    for key in MARKER_KEYS:
        marker = parse_marker(snap.summary.get(key))
        if marker is not None:
            return marker
    return None


def published_properties(checkpoint: str, snapshot_id: int, summary: Mapping[str, str],
                         format_version: int) -> Dict[str, str]:
    """What every publish sets in its own commit, in either engine: the checkpoint (`checkpoint`, a
    marker's WAP id), the data the mirror holds, the snapshot holding it and its rows (from its
    `summary`, in a table of `format_version`)."""
    rows = exact_rows(summary, format_version)
    return {CHECKPOINT_PROPERTY: checkpoint, DATA_CHECKPOINT_PROPERTY: checkpoint,
            DATA_SNAPSHOT_PROPERTY: str(int(snapshot_id)), DATA_ROWS_PROPERTY: "unknown" if rows is None else str(rows)}


def recorded_snapshot(mirror: TableState, key: str) -> Optional[int]:
    """The number the job recorded under `key` (a snapshot id: DATA_SNAPSHOT_PROPERTY,
    STAGED_PROPERTY; a count: DATA_ROWS_PROPERTY); None when it recorded none (a mirror of an
    earlier version) or the value is not a number."""
    value = (mirror.properties.get(key) or "").strip()
    return int(value) if value.lstrip("-").isdigit() else None


def is_snapshot(snap: Snapshot, recorded: int) -> bool:
    """Whether `snap` is the recorded snapshot, or its cherry-pick onto a newer one."""
    return snap.snapshot_id == recorded or snap.summary.get(Summary.SOURCE_SNAPSHOT_ID) == str(recorded)


def changes_readonly_mirror(snap: Snapshot) -> bool:
    """Whether a source snapshot changes what a readonly mirror holds. Another olake-cow job's
    truncate (truncate mode, marked `olake-cow.boundary`) does not: OLake's rows did not change,
    they were moved into that job's mirror, so this mirror keeps them."""
    return snap.changes_content and not snap.is_boundary


def find_checkpoint(mirror: TableState, source: Optional[TableState] = None) -> Optional[Marker]:
    """The source snapshot the mirror holds. The checkpoint property moves ahead of the data alone
    only past source snapshots that change nothing a readonly mirror holds (Advance): every change
    the job merges is a data commit, an empty one when no mirror row changed. So given `source`, a
    property ahead of the data over a change still in the source's history was set by someone else,
    and the data's marker is the checkpoint (replaying from it is harmless)."""
    if not mirror.exists:
        return None
    chain, _ = ancestors(mirror)
    published = next((m for m in (marker_of(s) for s in reversed(chain)) if m is not None), None)
    prop = parse_marker(mirror.properties.get(CHECKPOINT_PROPERTY))
    data = published or parse_marker(mirror.properties.get(DATA_CHECKPOINT_PROPERTY))  # publishes expired
    if data is not None and prop is not None and _ahead(data, prop):
        if source is not None and _changed_between(source, data, prop):
            return data
        return prop  # moved on without a data commit (only rewrites happened in the source)
    return published or prop


def _ahead(data: Marker, prop: Marker) -> bool:
    return (data.source_uuid == prop.source_uuid and data.sequence_number is not None
            and prop.sequence_number is not None and prop.sequence_number > data.sequence_number)


def _changed_between(source: TableState, data: Marker, prop: Marker) -> bool:
    """Whether a snapshot of the source's history after `data`, up to `prop`, changes what a readonly
    mirror holds."""
    low, high = int(data.sequence_number or 0), int(prop.sequence_number or 0)
    return any(changes_readonly_mirror(s) for s in ancestors(source)[0]
               if s.sequence_number is not None and low < s.sequence_number <= high)


def rejected(mirror: TableState) -> List[int]:
    ids = []
    for part in (mirror.properties.get(REJECTED_PROPERTY) or "").split(","):
        if part.strip().lstrip("-").isdigit():
            ids.append(int(part))
    return ids


def with_rejected(mirror: TableState, snapshot_id: int) -> str:
    """The REJECTED_PROPERTY value with `snapshot_id` added (the newest REJECTED_KEPT are kept)."""
    return ",".join(str(i) for i in (rejected(mirror) + [snapshot_id])[-REJECTED_KEPT:])


def staged_snapshots(mirror: TableState) -> List[Snapshot]:
    """Staged (unpublished, not rejected) mirror snapshots carrying one of our markers, newest first."""
    if not mirror.exists:
        return []
    skip = {s.snapshot_id for s in ancestors(mirror)[0]} | set(rejected(mirror))
    found = [s for s in mirror.snapshots
             if s.snapshot_id not in skip and parse_marker(s.summary.get(Summary.WAP_ID))]
    return sorted(found, key=lambda s: s.timestamp_ms, reverse=True)


def staged_for(mirror: TableState, marker: Marker) -> List[Snapshot]:
    """Staged (unpublished) mirror snapshots written for `marker`, newest first."""
    return [s for s in staged_snapshots(mirror) if s.summary.get(Summary.WAP_ID) == marker.wap_id]


def job_staged(mirror: TableState, marker: Optional[Marker] = None) -> List[Snapshot]:
    """The staged snapshot a run of the job left unpublished (for `marker`), if it is still staged:
    the one it recorded (STAGED_PROPERTY). Anything else staged under its WAP id is not published."""
    recorded = recorded_snapshot(mirror, STAGED_PROPERTY)
    staged = staged_snapshots(mirror) if marker is None else staged_for(mirror, marker)
    return [s for s in staged if s.snapshot_id == recorded]
