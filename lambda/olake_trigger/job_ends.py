"""A mirror run's end (EMR Serverless state change): release the namespace, publish the run's
metrics (its summary and billed cost), and start one follow-up run for commits that arrived
meanwhile."""
import logging
from typing import TYPE_CHECKING, Any, Dict, Mapping, Optional, Tuple

from botocore.exceptions import ClientError

from . import jobs
from .context import Context
from .decide import Outcome, PendingTables, TriggerStatus
from .events import JobStateChange
from .glue import read_json_s3
from .jobs import RunOptions
from .metrics import Prices, billed_points, summary_points
from .state import NamespaceState

if TYPE_CHECKING:
    from .starts import Starts

log = logging.getLogger("olake_trigger")


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


class JobEnds:
    def __init__(self, ctx: Context, starts: "Starts") -> None:
        self.ctx, self.starts = ctx, starts

    def on_job_state(self, ev: JobStateChange) -> Outcome:
        run_id, state = ev.job_run_id, ev.state
        if ev.application_id != self.ctx.s.application_id:
            return Outcome(TriggerStatus.IGNORED, "another EMR Serverless application", job_run_id=run_id, state=state)
        if not ev.terminal:
            return Outcome(TriggerStatus.IGNORED, f"state {state} is not final", job_run_id=run_id, state=state)
        run = self.ctx.runs.get(run_id, ev.application_id)
        namespace = (run.get("tags") or {}).get(jobs.NAMESPACE_TAG)
        if not namespace:
            return Outcome(TriggerStatus.IGNORED, "not a run this trigger started", job_run_id=run_id, state=state)
        return self.finish(namespace, {**run, "state": state}).about(namespace, job_run_id=run_id, state=state)

    def finish(self, namespace: str, run: Mapping[str, Any]) -> Outcome:
        """Close the run, then start (or debounce) the follow-up run for what arrived meanwhile."""
        ctx = self.ctx
        closed = close_run(ctx, namespace, run)
        if closed is None:
            return Outcome(TriggerStatus.DUPLICATE, "this run's end was already handled")
        st, summary_status = closed
        follow_up = None
        if st.pending:
            cfg = ctx.load_config()
            due = st.last_commit + ctx.s.quiet_period_s
            if ctx.s.quiet_period_s and due > ctx.now():
                ctx.debouncer().schedule(namespace, due)
                follow_up = Outcome(TriggerStatus.DEBOUNCED, due=due)
            else:
                follow_up = self.starts.start(namespace, PendingTables(), f"followup:{run['jobRunId']}",
                                              RunOptions("followup"), cfg)
        return Outcome(TriggerStatus.FINISHED, summary_status=summary_status, follow_up=follow_up)
