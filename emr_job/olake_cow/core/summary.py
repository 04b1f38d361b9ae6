"""The run summary: per-table results, written as JSON to a local path or S3. The trigger Lambda
reads it back for its metrics, with the same status names."""
import json
import time
import uuid
from dataclasses import asdict, dataclass, field
from enum import Enum
from typing import Any, Dict, List, Optional

from .checkpoint import find_checkpoint
from .snapshots import TableState


class TableStatus(str, Enum):
    PENDING = "pending"
    MERGED = "merged"  # the mirror moved to a newer source snapshot
    UP_TO_DATE = "up_to_date"  # nothing to merge
    DRY_RUN = "dry_run"
    MAINTAINED = "maintained"  # --maintenance-only
    SKIPPED = "skipped"  # not an OLake table (no _olake_id): left alone, with a note
    FAILED = "failed"
    VERIFY_FAILED = "verify_failed"  # --verify found differences
    HANDED_OVER = "handed_over"  # --engine python --hand-over: left to the Spark engine (the express lane's EMR run)


class RunStatus(str, Enum):
    SUCCEEDED = "succeeded"
    FAILED = "failed"


OK_STATUSES = (TableStatus.MERGED, TableStatus.UP_TO_DATE, TableStatus.DRY_RUN, TableStatus.MAINTAINED,
               TableStatus.SKIPPED, TableStatus.HANDED_OVER)


@dataclass
class TableResult:
    table: str
    mirror: str
    status: TableStatus = TableStatus.PENDING
    source_mode: Optional[str] = None  # readonly | truncate
    mirror_format: Optional[str] = None  # cow | dv
    engine: str = "spark"  # the engine that ran the table (modes.Engine's value): spark | python
    engine_reason: str = ""  # why (with --engine auto: what the python engine handed over)
    merges: int = 0  # change sets merged and published by this run
    rows_upserted: int = 0  # rows the merges wrote: new keys and new versions of keys
    rows_deleted: int = 0  # keys the change sets deleted
    rows_replaced: int = 0  # mirror rows the merges replaced or removed (from their commits)
    files_written: int = 0
    bytes_written: int = 0
    files_read: int = 0  # source files read for the change sets + mirror files the merges rewrote
    bytes_read: int = 0
    files_rewritten: int = 0  # mirror files replaced by the merges (what copy-on-write costs)
    duration_s: float = 0.0
    timings_s: Dict[str, float] = field(default_factory=lambda: {
        "planning": 0.0, "reading_changes": 0.0, "merging": 0.0, "committing": 0.0})
    truncated: int = 0  # truncate mode: change sets closed by this run
    target: Optional[int] = None  # readonly: the source snapshot this run stopped at
    checkpoint: Optional[int] = None  # the source snapshot (truncate: boundary) the mirror holds
    last_change_ms: Optional[int] = None  # commit time of the newest source change in the mirror
    repaired: int = 0  # 1 when the run rebuilt a mirror that someone else changed (or asked another delete mode)
    plan: List[str] = field(default_factory=list)
    notes: List[str] = field(default_factory=list)
    maintenance: Optional[Dict[str, Any]] = None  # see maintenance.MaintenanceResult
    verify: Optional[Dict[str, Any]] = None  # see verify.VerifyResult
    error: Optional[str] = None
    error_kind: Optional[str] = None  # bad_input (the job exits 2) | failure (exits 1)
    failure: Optional[BaseException] = field(default=None, repr=False, compare=False)  # not in the summary

    @property
    def ok(self) -> bool:
        return self.status in OK_STATUSES

    def note_rebuild(self, repair: Optional[str], rebuild: Optional[str]) -> None:
        """After a table's steps, in either engine: why its mirror was rebuilt (`rebuild`, or `repair`
        when that repaired someone's change: `repaired`), if a merge ran."""
        if (repair or rebuild) and self.merges:
            self.repaired = 1 if repair else 0
            self.notes.append(f"rebuilt the mirror: {repair or rebuild}")

    def finish(self, source: TableState, mirror: TableState) -> None:
        """A table's loop ended with nothing left to do: its status, the checkpoint it holds, and the
        commit time of the newest source change in the mirror (the lag metric)."""
        self.status = TableStatus.MERGED if self.merges else TableStatus.UP_TO_DATE
        cp = find_checkpoint(mirror, source)
        self.checkpoint = cp.snapshot_id if cp else None
        held = source.snapshot(cp.snapshot_id) if cp else None
        if held is not None and held.is_boundary:  # truncate mode: the change set is the boundary's parent
            held = source.snapshot(held.parent_id)
        self.last_change_ms = held.timestamp_ms if held else None

    def add_time(self, phase: str, seconds: float) -> None:
        self.timings_s[phase] = round(self.timings_s.get(phase, 0.0) + seconds, 3)

    def fail(self, exc: BaseException, text: str) -> None:
        from .errors import BAD_INPUT_ERRORS

        self.status, self.failure, self.error = TableStatus.FAILED, exc, text
        self.error_kind = "bad_input" if isinstance(exc, BAD_INPUT_ERRORS) else "failure"

    def to_dict(self) -> Dict[str, Any]:
        failure, self.failure = self.failure, None  # an exception is no summary value
        try:
            d = asdict(self)
        finally:
            self.failure = failure
        d.pop("failure")
        d["status"] = self.status.value
        return d


def render(summary: Dict[str, Any]) -> str:
    return json.dumps(summary, indent=2, sort_keys=True, default=str)


def new_run_id() -> str:
    return time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()) + "-" + uuid.uuid4().hex[:8]
