"""Turns a job's run summary into CloudWatch metric points. Pure."""
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Dict, List, Mapping, Optional

FAILED_STATES = ("FAILED", "CANCELLED")


@dataclass(frozen=True)
class Point:
    name: str
    unit: str  # a CloudWatch unit name: Count, Seconds
    value: float
    table: Optional[str] = None  # None: a namespace-level point


def _epoch_ms(iso: Optional[str]) -> Optional[int]:
    if not iso:
        return None
    try:
        return int(datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp() * 1000)
    except ValueError:
        return None


def summary_points(summary: Optional[Mapping[str, Any]], state: str, table_limit: int) -> List[Point]:
    """Namespace totals, plus per-table points when the run has at most `table_limit` tables.
    `state` is the EMR job state; a failed or cancelled run, or a missing summary, counts a failure."""
    points: List[Point] = []
    failed_run = state in FAILED_STATES or not summary or summary.get("status") != "succeeded"
    points.append(Point("JobFailed", "Count", 1.0 if failed_run else 0.0))
    if not summary:
        return points
    tables: List[Dict[str, Any]] = list(summary.get("tables") or [])
    finished = _epoch_ms(summary.get("finished_at"))
    totals = {"RowsUpserted": 0, "RowsDeleted": 0, "FilesWritten": 0}
    compacted = failed = 0
    lags: List[float] = []
    per_table = len(tables) <= table_limit
    for t in tables:
        status = t.get("status")
        compacted += status == "merged"
        failed += status == "failed"
        upserted = int(t.get("rows_upserted") or 0)
        values = {"RowsUpserted": upserted, "RowsDeleted": int(t.get("rows_deleted") or 0),
                  "FilesWritten": int(t.get("files_written") or 0)}
        for k, v in values.items():
            totals[k] += v
        lag = None
        if status == "merged" and finished and t.get("last_change_ms"):
            lag = max(0.0, (finished - int(t["last_change_ms"])) / 1000.0)
            lags.append(lag)
        if per_table:
            name = str(t.get("table"))
            points += [Point(k, "Count", float(v), name) for k, v in values.items()]
            points.append(Point("TableFailed", "Count", float(status == "failed"), name))
            points.append(Point("DurationSeconds", "Seconds", float(t.get("duration_s") or 0.0), name))
            if lag is not None:
                points.append(Point("LagSeconds", "Seconds", lag, name))
    points += [Point("TablesCompacted", "Count", float(compacted)),
               Point("TablesFailed", "Count", float(failed))]
    points += [Point(k, "Count", float(v)) for k, v in totals.items()]
    points.append(Point("DurationSeconds", "Seconds", float(summary.get("duration_s") or 0.0)))
    if lags:
        points.append(Point("LagSeconds", "Seconds", max(lags)))
    return points
