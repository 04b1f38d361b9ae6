"""A run's lifecycle the start and end handlers share: closing a run (release the namespace,
publish its metrics) and finding that a leased run already ended. starts.py and job_ends.py both
import it; neither imports the other."""
import logging
from typing import Any, Dict, List, Mapping, Optional, Protocol, Tuple

from botocore.exceptions import ClientError

from olake_cow.core.config import DestinationConfig
from olake_cow.core.lane import LANE_RUN_PREFIX

from .context import Context
from .decide import EMR, LAMBDA, Outcome, TableSelection
from .glue import read_json_s3
from .jobs import RunOptions
from .metrics import Point, Prices, billed_points, engine_points, lane_billed_points, summary_points
from .state import NamespaceState

log = logging.getLogger("olake_trigger")


class StartsRuns(Protocol):
    """What a run's end needs of the start handler: a follow-up run (starts.Starts)."""

    def start(self, namespace: str, requested: TableSelection, window: str, opts: RunOptions,
              cfg: DestinationConfig) -> Outcome: ...


Closed = Tuple[NamespaceState, Optional[Dict[str, Any]]]  # the state a run left, its summary


def close_run(ctx: Context, namespace: str, run: Mapping[str, Any]) -> Optional[Closed]:
    """Release the namespace from an EMR `run` and publish its metrics (None: its end was already
    handled)."""
    prices = Prices(ctx.s.price_vcpu_hour, ctx.s.price_gb_hour, ctx.s.price_storage_gb_hour)
    return _close(ctx, namespace, run["jobRunId"], run["state"], billed_points(run, prices), EMR)


def close_lane(ctx: Context, namespace: str, run_id: str, succeeded: bool, seconds: float) -> Optional[Closed]:
    """Release the namespace from an express-lane run that took `seconds` (billed) and publish its
    metrics (None: its end was already handled)."""
    points = lane_billed_points(seconds, ctx.s.lane_memory_mb, ctx.s.price_lambda_gb_second)
    return _close(ctx, namespace, run_id, "SUCCESS" if succeeded else "FAILED", points, LAMBDA)


def _close(ctx: Context, namespace: str, run_id: str, state: str, billed: List[Point], engine: str) -> Optional[Closed]:
    st = ctx.store.finish(namespace, run_id)
    if st is None:
        return None
    summary: Optional[Dict[str, Any]] = None
    if st.summary_uri:
        try:
            summary = read_json_s3(ctx.c.s3, st.summary_uri)
        except (ClientError, ValueError) as exc:
            log.warning("no summary at %s (%s)", st.summary_uri, type(exc).__name__)
    for point in summary_points(summary, state, ctx.s.table_metrics_limit) + billed + engine_points(
            engine, summary, billed):
        ctx.emit(namespace, point)
    return st, summary



def still_running(ctx: Context, namespace: str, job_run_id: Optional[str]) -> bool:
    """True if `job_run_id` still runs. A finished run whose end event was lost is finished here."""
    if not job_run_id or job_run_id.startswith(LANE_RUN_PREFIX):
        return True  # still starting; or on the express lane, whose lease ends soon by itself
    run = ctx.runs.ended(job_run_id)
    if run is None:
        return True
    log.warning("mirror run %s ended (%s) without an end event reaching us; finishing it now",
                job_run_id, run["state"])
    close_run(ctx, namespace, run)
    return False
