"""The audit of write-audit-publish: a staged mirror snapshot is published only if it passes.

Any mirror: no equality deletes, and no format-version-2 position-delete files (engines such as
Databricks ignore them). A cow mirror holds no delete file of any kind; a dv mirror may hold
deletion vectors.

Counts: the change set's own counts (rows to upsert, keys to delete: from the pass over the change
set the merge makes anyway) must agree with what the staged commit's own metadata says it did; no
file is read again for the audit. A merge matches at most one mirror row per upserted or deleted key
(the mirror's keys are unique):
  dv   the merge writes every upsert row once and marks each matched row in a deletion vector:
       added-records = upserts, 0 <= new positions <= upserts + deletes (a file's new vector carries
       its old positions and replaces the old vector: new = added - removed positions), rows shown
       grow by upserts minus new positions;
  cow  the merge rewrites the files holding matched rows: added-records = upserts + rows carried
       over (so at least the upserts), deleted-records = rows carried over + matched rows, so the
       matched rows (deleted - added + upserts) lie between 0 and upserts + deletes, and the rows
       shown are the parent's plus the upserts minus the matched rows;
  a rebuild shows exactly the rows it wrote.
The full comparison of a mirror with its source is --verify (a scan of both tables).
"""
from dataclasses import dataclass
from typing import List

from .errors import AuditError
from .formats import FORMATS
from .modes import MirrorFormat
from .snapshots import Snapshot, Summary
from .summary import TableResult


@dataclass(frozen=True)
class ChangeCounts:
    """What a resolved change set asks for: rows to upsert, keys to delete."""

    upserts: int
    deletes: int


def live_rows(snap: Snapshot) -> int:
    """Rows a snapshot shows: data-file records minus positions its deletion vectors delete."""
    return snap.summary_int(Summary.TOTAL_RECORDS, -1) - snap.summary_int(Summary.TOTAL_POS_DELETES)


def replaced_rows(staged: Snapshot, counts: ChangeCounts, fmt: MirrorFormat) -> int:
    """Mirror rows the staged merge replaced or removed (matched rows), from its commit."""
    return FORMATS[fmt].replaced_rows(staged, counts.upserts)


def count_published(result: TableResult, staged: Snapshot, counts: ChangeCounts, rebuild: bool,
                    fmt: MirrorFormat) -> int:
    """Add a published snapshot's rows and files to the table's result, as either engine reports a
    publish (a rebuild's rows from its commit, a merge's from its change set). Returns the rows upserted."""
    rewritten = staged.summary_int(Summary.DELETED_DATA_FILES)
    upserted = staged.summary_int(Summary.ADDED_RECORDS) if rebuild else counts.upserts
    result.rows_upserted += upserted
    if not rebuild:
        result.rows_deleted += counts.deletes
        result.rows_replaced += replaced_rows(staged, counts, fmt)
    result.files_written += staged.summary_int(Summary.ADDED_DATA_FILES)
    result.bytes_written += staged.summary_int(Summary.ADDED_FILES_SIZE)
    result.files_rewritten += rewritten
    result.files_read += rewritten
    result.bytes_read += staged.summary_int(Summary.REMOVED_FILES_SIZE)
    return upserted


def forbidden_deletes(snap: Snapshot, fmt: MirrorFormat) -> List[str]:
    """The delete files a mirror of format `fmt` must not hold, as 'key=value' findings."""
    return list(FORMATS[fmt].forbidden_deletes(snap))


def audit_problems(staged: Snapshot, parent_rows: int, counts: ChangeCounts, rebuild: bool,
                   fmt: MirrorFormat = MirrorFormat.COW) -> List[str]:
    rules = FORMATS[fmt]
    problems = list(rules.forbidden_deletes(staged))
    rows, added = live_rows(staged), staged.summary_int(Summary.ADDED_RECORDS)
    if rebuild:
        if rows != added:
            problems.append(f"rows={rows} (total-records minus deleted positions), expected the {added} written")
        return problems
    matched = rules.replaced_rows(staged, counts.upserts)
    problems += [p for p in (rules.added_rows_problem(added, counts.upserts),) if p]
    if not 0 <= matched <= counts.upserts + counts.deletes:
        problems.append(f"{matched} mirror rows replaced or removed, but the change set has {counts.upserts} "
                        f"upserts and {counts.deletes} deletes")
    if rows != parent_rows + counts.upserts - matched:
        problems.append(f"rows={rows}, expected {parent_rows} + {counts.upserts} upserts - {matched} replaced")
    return problems


def audit(staged: Snapshot, parent_rows: int, counts: ChangeCounts, rebuild: bool, table: str,
          fmt: MirrorFormat = MirrorFormat.COW) -> None:
    problems = audit_problems(staged, parent_rows, counts, rebuild, fmt)
    if problems:
        raise AuditError(f"{table}: staged snapshot {staged.snapshot_id} failed its audit "
                         f"({'; '.join(problems)}); it was not published")
