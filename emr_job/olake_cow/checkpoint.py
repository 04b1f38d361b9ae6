"""The mirror's checkpoint: which source boundary its current state includes.

Every mirror commit is staged under a WAP id `olake-cow:<source-uuid>:<boundary-id>`, so the
published snapshot carries the marker in its summary (`wap.id` after a fast-forward,
`published-wap-id` after a cherry-pick). After each publish the same value is also written to
the table property `olake-cow.checkpoint`, which survives snapshot expiry and maintenance commits.
The checkpoint is the marker on the newest ancestor of the mirror's current snapshot, else the
property. Replaying change sets from an older checkpoint is harmless (merges are idempotent and
applied in order), so a property that lags the snapshots never loses data.
"""
from dataclasses import dataclass
from typing import List, Optional

from .snapshots import Snapshot, TableState, ancestors

WAP_PREFIX = "olake-cow"
CHECKPOINT_PROPERTY = "olake-cow.checkpoint"
SOURCE_PROPERTY = "olake-cow.source-table"
MARKER_KEYS = ("wap.id", "published-wap-id")


@dataclass(frozen=True)
class Marker:
    source_uuid: str
    boundary_id: int

    @property
    def wap_id(self) -> str:
        return f"{WAP_PREFIX}:{self.source_uuid}:{self.boundary_id}"


def parse_marker(value: Optional[str]) -> Optional[Marker]:
    """Strict parser: anything that is not exactly our format is not a checkpoint."""
    if not value:
        return None
    parts = value.split(":")
    if len(parts) != 3 or parts[0] != WAP_PREFIX or not parts[1]:
        return None
    try:
        return Marker(parts[1], int(parts[2]))
    except ValueError:
        return None


def marker_of(snap: Snapshot) -> Optional[Marker]:
    for key in MARKER_KEYS:
        marker = parse_marker(snap.summary.get(key))
        if marker is not None:
            return marker
    return None


def find_checkpoint(mirror: TableState) -> Optional[Marker]:
    if not mirror.exists:
        return None
    chain, _ = ancestors(mirror)
    for snap in reversed(chain):
        marker = marker_of(snap)
        if marker is not None:
            return marker
    return parse_marker(mirror.properties.get(CHECKPOINT_PROPERTY))


def staged_for(mirror: TableState, marker: Marker) -> List[Snapshot]:
    """Staged (unpublished) mirror snapshots written for `marker`, newest first."""
    if not mirror.exists:
        return []
    published = {s.snapshot_id for s in ancestors(mirror)[0]}
    found = [s for s in mirror.snapshots
             if s.snapshot_id not in published and s.summary.get("wap.id") == marker.wap_id]
    return sorted(found, key=lambda s: s.timestamp_ms, reverse=True)
