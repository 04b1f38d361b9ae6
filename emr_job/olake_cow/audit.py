"""The audit of write-audit-publish: a staged mirror snapshot is published only if it passes."""
from typing import List

from .errors import AuditError
from .snapshots import Snapshot

DELETE_COUNTERS = ("total-delete-files", "total-equality-deletes", "total-position-deletes")


def audit_problems(staged: Snapshot, expected_records: int) -> List[str]:
    problems = [f"{key}={staged.summary.get(key)}" for key in DELETE_COUNTERS
                if staged.summary_int(key) != 0]
    total = staged.summary_int("total-records", -1)
    if total != expected_records:
        problems.append(f"total-records={total}, expected {expected_records}")
    return problems


def audit(staged: Snapshot, expected_records: int, table: str) -> None:
    problems = audit_problems(staged, expected_records)
    if problems:
        raise AuditError(f"{table}: staged snapshot {staged.snapshot_id} failed its audit "
                         f"({'; '.join(problems)}); it was not published")
