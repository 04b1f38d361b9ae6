"""A run's lifecycle the start and end handlers share: closing a run (release the namespace,
publish its metrics) and finding that a leased run already ended. starts.py and job_ends.py both
import it; neither imports the other."""
import logging
from typing import Any, Dict, Mapping, Optional, Protocol, Tuple

from botocore.exceptions import ClientError

from olake_cow.core.config import DestinationConfig

from .context import Context
from .decide import Outcome, TableSelection
from .glue import read_json_s3
from .jobs import RunOptions
from .metrics import Prices, billed_points, summary_points
from .state import NamespaceState

log = logging.getLogger("olake_trigger")


class StartsRuns(Protocol):
    """What a run's end needs of the start handler: a follow-up run (starts.Starts)."""

    def start(self, namespace: str, requested: TableSelection, window: str, opts: RunOptions,
              cfg: DestinationConfig) -> Outcome: ...


def close_run(ctx: Context, namespace: str, run: Mapping[str, Any]) -> Optional[Tuple[NamespaceState, Optional[str]]]:
    """Release the namespace from `run` and publish its metrics: the state it left and its summary's
    status (None: its end was already handled)."""
    st = ctx.store.finish(namespace, run["jobRunId"])
    if st is None:
        return None
    summary: Optional[Dict[str, Any]] = None
    if st.summary_uri:
        try:
            summary = read_json_s3(ctx.c.s3, st.summary_uri)
        except (ClientError, ValueError) as exc:
            log.warning("no summary at %s (%s)", st.summary_uri, type(exc).__name__)
    prices = Prices(ctx.s.price_vcpu_hour, ctx.s.price_gb_hour, ctx.s.price_storage_gb_hour)
    for point in summary_points(summary, run["state"], ctx.s.table_metrics_limit) + billed_points(run, prices):
        ctx.emit(namespace, point)
    return st, (summary or {}).get("status")



def still_running(ctx: Context, namespace: str, job_run_id: Optional[str]) -> bool:
    """True if `job_run_id` still runs. A finished run whose end event was lost is finished here."""
    if not job_run_id:
        return True  # the lease holder is still starting its run
    run = ctx.runs.ended(job_run_id)
    if run is None:
        return True
    log.warning("mirror run %s ended (%s) without an end event reaching us; finishing it now",
                job_run_id, run["state"])
    close_run(ctx, namespace, run)
    return False
