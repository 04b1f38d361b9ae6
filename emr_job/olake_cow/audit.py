"""The audit of write-audit-publish: a staged mirror snapshot is published only if it passes.

Any mirror: no equality deletes, and no format-version-2 position-delete files (engines such as
Databricks ignore them). A cow mirror holds no delete file of any kind; a dv mirror may hold
deletion vectors. The rows it shows (records minus positions deleted by deletion vectors) must be
what the change set predicts.
"""
from typing import List

from .errors import AuditError
from .modes import MirrorFormat
from .snapshots import Snapshot, Summary


def live_rows(snap: Snapshot) -> int:
    """Rows a snapshot shows: data-file records minus positions its deletion vectors delete."""
    return snap.summary_int(Summary.TOTAL_RECORDS, -1) - snap.summary_int(Summary.TOTAL_POS_DELETES)


def forbidden_deletes(snap: Snapshot, fmt: MirrorFormat) -> List[str]:
    """The delete files a mirror of format `fmt` must not hold, as 'key=value' findings."""
    if fmt == MirrorFormat.COW:
        keys = (Summary.TOTAL_DELETE_FILES, Summary.TOTAL_EQ_DELETES, Summary.TOTAL_POS_DELETES)
    else:
        keys = (Summary.TOTAL_EQ_DELETES, Summary.ADDED_EQ_DELETE_FILES, Summary.ADDED_POS_DELETE_FILES)
    return [f"{key}={snap.summary.get(key)}" for key in keys if snap.summary_int(key) != 0]


def audit_problems(staged: Snapshot, expected_rows: int, fmt: MirrorFormat = MirrorFormat.COW) -> List[str]:
    problems = forbidden_deletes(staged, fmt)
    rows = live_rows(staged)
    if rows != expected_rows:
        problems.append(f"rows={rows} (total-records minus deleted positions), expected {expected_rows}")
    return problems


def audit(staged: Snapshot, expected_rows: int, table: str, fmt: MirrorFormat = MirrorFormat.COW) -> None:
    problems = audit_problems(staged, expected_rows, fmt)
    if problems:
        raise AuditError(f"{table}: staged snapshot {staged.snapshot_id} failed its audit "
                         f"({'; '.join(problems)}); it was not published")
