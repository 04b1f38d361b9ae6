"""What a snapshot's manifests list, as small records every engine's file listing returns, and the
rule that picks older data files new position deletes can reach (no delete file is read)."""
from dataclasses import dataclass
from typing import List, Optional, Sequence, Set

DATA, POSITION_DELETES, EQUALITY_DELETES = 0, 1, 2  # Iceberg's FileContent ids
# Field id of `file_path` in position-delete files (MetadataColumns.DELETE_FILE_PATH): its bounds
# say which data files a position-delete file can point at, without reading it.
DELETE_FILE_PATH_ID = 2147483546


@dataclass(frozen=True)
class LiveFile:
    """A data or delete file live in a snapshot (a manifest entry that is added or existing)."""

    seq: int  # data sequence number
    content: int  # DATA, POSITION_DELETES or EQUALITY_DELETES
    path: str
    format: str  # upper case: PARQUET, AVRO, ORC, PUFFIN
    size: int
    records: int
    referenced: Optional[str] = None  # the one data file a delete file points at, when it says so
    equality_ids: Sequence[int] = ()
    lo: Optional[str] = None  # the file's `_olake_id` bounds (truncated, still inclusive)
    hi: Optional[str] = None
    # position-delete files: bounds of the data file paths they point at (UTF-8 bytes)
    ref_lo: Optional[bytes] = None
    ref_hi: Optional[bytes] = None

    def may_point_at(self, data_path: str) -> bool:
        """Whether this position-delete file can hold positions of `data_path` (by its bounds;
        True when they are unknown)."""
        if self.referenced:
            return self.referenced == data_path
        if self.ref_lo is None or self.ref_hi is None:
            return True
        return self.ref_lo <= data_path.encode("utf-8") <= self.ref_hi


@dataclass(frozen=True)
class RemovedFile:
    path: str
    seq: int  # data sequence number


def held_files_with_new_deletes(positional: Sequence[LiveFile], fresh: Set[str], live: Sequence[str]) -> List[str]:
    """Older data files (held by the mirror) that new position deletes or deletion vectors can
    point at: the file a delete file references, else every file within the bounds of the data
    file paths it holds (a superset is safe: unchanged files show no deleted key). No delete file
    is read."""
    held = {p for p in live if p not in fresh}
    found = {e.referenced for e in positional if e.referenced} & held
    unknown = [e for e in positional if not e.referenced]
    if unknown:
        found |= {p for p in held if any(e.may_point_at(p) for e in unknown)}
    return sorted(found)


def equality_delete_problem(path: str, ids: Sequence[int], key_field_id: Optional[int]) -> Optional[str]:
    """Why an equality-delete file cannot be applied by key (None when it deletes by _olake_id)."""
    if list(ids or []) == [key_field_id]:
        return None
    return (f"equality delete file {path} deletes by field ids {list(ids or [])}, not by _olake_id "
            f"(field id {key_field_id}); only _olake_id deletes are supported")
