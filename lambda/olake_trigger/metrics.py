"""Turns a mirror run's summary, and what EMR Serverless billed for it, into CloudWatch metric
points. Pure. Statuses are the job's own (olake_cow.summary), so the two cannot drift."""
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Dict, List, Mapping, Optional, Tuple

from olake_cow.core.summary import RunStatus, TableStatus

FAILED_STATES = ("FAILED", "CANCELLED")
TABLE_VALUES = (("RowsUpserted", "rows_upserted"), ("RowsDeleted", "rows_deleted"), ("FilesWritten", "files_written"),
                ("MirrorsRepaired", "repaired"))


@dataclass(frozen=True)
class Point:
    name: str
    unit: str  # a CloudWatch unit name: Count, Seconds, None
    value: float
    table: Optional[str] = None  # None: a namespace-level point
    # Named in the metric's log record (EMF metadata), not as a dimension: no extra billed metrics.
    metadata: Tuple[Tuple[str, str], ...] = field(default=())
    engine: Optional[str] = None  # set: published with the engine as its one dimension (runs per engine)


@dataclass(frozen=True)
class Prices:
    """List prices (USD) the estimated cost of a run is computed with (stack parameters)."""

    vcpu_hour: float
    gb_hour: float
    storage_gb_hour: float


def _epoch_ms(iso: Optional[str]) -> Optional[int]:
    if not iso:
        return None
    try:
        return int(datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp() * 1000)
    except ValueError:
        return None


def _lag(t: Mapping[str, Any], finished: Optional[int]) -> Optional[float]:
    """Seconds from the newest source change a merged table holds to the run's end."""
    if t.get("status") != TableStatus.MERGED.value or not finished or not t.get("last_change_ms"):
        return None
    return max(0.0, (finished - int(t["last_change_ms"])) / 1000.0)


def _table_points(t: Mapping[str, Any], values: Mapping[str, int], lag: Optional[float]) -> List[Point]:
    name = str(t.get("table"))
    own = tuple((k, str(t[k])) for k in ("mirror_format", "source_mode") if t.get(k))
    points = [Point(k, "Count", float(v), name, own) for k, v in values.items()]
    points.append(Point("TableFailed", "Count", float(t.get("status") == TableStatus.FAILED.value), name, own))
    points.append(Point("DurationSeconds", "Seconds", float(t.get("duration_s") or 0.0), name, own))
    if lag is not None:
        points.append(Point("LagSeconds", "Seconds", lag, name, own))
    return points


def _kinds(tables: List[Dict[str, Any]]) -> Tuple[Tuple[str, str], ...]:
    """Which mirror formats and source modes the run's tables have (e.g. "cow", "cow,dv")."""
    named = tuple((key, ",".join(sorted({str(t[key]) for t in tables if t.get(key)})))
                  for key in ("mirror_format", "source_mode"))
    return tuple((k, v) for k, v in named if v)


def summary_points(summary: Optional[Mapping[str, Any]], state: str, table_limit: int) -> List[Point]:
    """Namespace totals, plus per-table points when the run has at most `table_limit` tables
    (0: never). `state` is the EMR job state; a failed or cancelled run, a failed table or a
    missing summary counts a failure."""
    failed_run = state in FAILED_STATES or not summary or summary.get("status") != RunStatus.SUCCEEDED.value
    points: List[Point] = [Point("JobFailed", "Count", 1.0 if failed_run else 0.0)]
    if not summary:
        return points
    tables: List[Dict[str, Any]] = list(summary.get("tables") or [])
    named = _kinds(tables)
    finished = _epoch_ms(summary.get("finished_at"))
    totals = {name: 0 for name, _ in TABLE_VALUES}
    lags: List[float] = []
    for t in tables:
        values = {name: int(t.get(key) or 0) for name, key in TABLE_VALUES}
        for k, v in values.items():
            totals[k] += v
        lag = _lag(t, finished)
        lags += [lag] if lag is not None else []
        if 0 < len(tables) <= table_limit:
            points += _table_points(t, values, lag)
    statuses = [t.get("status") for t in tables]
    merged = statuses.count(TableStatus.MERGED.value)
    failed = statuses.count(TableStatus.FAILED.value) + statuses.count(TableStatus.VERIFY_FAILED.value)
    ns_points = [Point("TablesMerged", "Count", float(merged)), Point("TablesFailed", "Count", float(failed))]
    ns_points += [Point(k, "Count", float(v)) for k, v in totals.items()]
    ns_points.append(Point("DurationSeconds", "Seconds", float(summary.get("duration_s") or 0.0)))
    if lags:
        ns_points.append(Point("LagSeconds", "Seconds", max(lags)))
    return points + [Point(p.name, p.unit, p.value, None, named) for p in ns_points]


def billed_points(job_run: Mapping[str, Any], prices: Prices) -> List[Point]:
    """What EMR Serverless billed for a finished run (GetJobRun's billedResourceUtilization), and
    its estimated cost at the given list prices."""
    billed = job_run.get("billedResourceUtilization") or {}
    vcpu, memory, storage = (float(billed.get(k) or 0.0) for k in ("vCPUHour", "memoryGBHour", "storageGBHour"))
    cost = vcpu * prices.vcpu_hour + memory * prices.gb_hour + storage * prices.storage_gb_hour
    return [Point("BilledVCPUHours", "None", vcpu), Point("BilledMemoryGBHours", "None", memory),
            Point("BilledStorageGBHours", "None", storage), Point("EstimatedCostUSD", "None", round(cost, 6))]


def lane_billed_points(seconds: float, memory_mb: int, price_gb_second: float) -> List[Point]:
    """What Lambda bills for an express-lane run: its duration times its memory, at the list price."""
    gb_seconds = seconds * memory_mb / 1024.0
    return [Point("BilledLambdaGBSeconds", "None", round(gb_seconds, 3)),
            Point("EstimatedCostUSD", "None", round(gb_seconds * price_gb_second, 6))]


def engine_points(engine: str, summary: Optional[Mapping[str, Any]], billed: List[Point]) -> List[Point]:
    """A run's count, duration and cost under its engine ("lambda" or "emr"), for the dashboard."""
    cost = sum(p.value for p in billed if p.name == "EstimatedCostUSD")
    seconds = float((summary or {}).get("duration_s") or 0.0)
    return [Point("Runs", "Count", 1.0, engine=engine), Point("RunSeconds", "Seconds", seconds, engine=engine),
            Point("RunCostUSD", "None", cost, engine=engine)]
