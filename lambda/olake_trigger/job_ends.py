"""A mirror run's end (EMR Serverless state change, or the express lane's destination record):
release the namespace, publish the run's metrics (its summary and billed cost), and start one
follow-up run: for commits that arrived meanwhile, and after the lane for what it left to EMR."""
import logging
from dataclasses import replace
from typing import Any, Callable, Dict, Mapping, Optional, Tuple, Union

from olake_cow.core.config import DestinationConfig
from olake_cow.core.lane import unfinished

from . import jobs
from .context import Context
from .decide import LAMBDA, AllTables, Outcome, PendingTables, Tables, TriggerStatus
from .events import JobStateChange, LaneEnd
from .jobs import RunOptions
from .lifecycle import StartsRuns, close_lane, close_run
from .state import NamespaceState

log = logging.getLogger("olake_trigger")


class JobEnds:
    def __init__(self, ctx: Context, starts: StartsRuns) -> None:
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
        st, summary = closed
        return Outcome(TriggerStatus.FINISHED, summary_status=(summary or {}).get("status"),
                       follow_up=self._follow_up(st, run["jobRunId"], ctx.load_config) if st.pending else None)

    def _follow_up(self, st: NamespaceState, run_id: str, load_config: Callable[[], DestinationConfig]) -> Outcome:
        """The run (or debounce) for the commits that arrived while `run_id` held the namespace."""
        ctx, cfg = self.ctx, load_config()
        due = st.last_commit + ctx.s.quiet_period_s
        if ctx.s.quiet_period_s and due > ctx.now():
            ctx.debouncer().schedule(st.namespace, due)
            return Outcome(TriggerStatus.DEBOUNCED, due=due)
        return self.starts.start(st.namespace, PendingTables(), f"followup:{run_id}", RunOptions("followup"), cfg)

    def on_lane_end(self, ev: LaneEnd, cfg: DestinationConfig) -> Outcome:
        """The express lane's end: release the namespace, publish the run's metrics, and start one EMR
        run for what the lane did not finish (handed over, failed, or all of it when the function
        failed or timed out) and what was over its budget. Only those go to EMR, and only once."""
        req, ctx = ev.request, self.ctx
        took = float(ev.response.get("duration_s") or 0.0) if ev.succeeded else ctx.s.lane_timeout_s * ev.invocations
        closed = close_lane(ctx, req.namespace, req.run_id, ev.succeeded, took)
        if closed is None:
            return Outcome(TriggerStatus.DUPLICATE, "this express-lane run's end was already handled")
        st, summary = closed
        left = _left(ev, summary)
        owed: Union[AllTables, Tables] = AllTables() if left is None else Tables(
            tuple(sorted(set(left) | set(req.emr_after))))
        done = Outcome(TriggerStatus.FINISHED, summary_status=(summary or {}).get("status"), engine=LAMBDA,
                       namespace=req.namespace, job_run_id=req.run_id)
        if isinstance(owed, Tables) and not owed.names:
            return replace(done, follow_up=self._follow_up(st, req.run_id, lambda: cfg) if st.pending else None)
        log.info("namespace %s: express-lane run %s %s; EMR takes %s", req.namespace, req.run_id,
                 "ended" if ev.succeeded else f"failed ({ev.response.get('errorMessage', 'no answer')})",
                 "every table" if isinstance(owed, AllTables) else ", ".join(owed.names))
        emr = self.starts.start(req.namespace, owed, f"lane:{req.run_id}", RunOptions("lane-handover", lane=False),
                                cfg)
        return replace(done, follow_up=emr)


def _left(ev: LaneEnd, summary: Optional[Dict[str, Any]]) -> Optional[Tuple[str, ...]]:
    """What the lane did not finish (None: every table of the namespace): as it answered, else as its
    summary says; all it was asked when it failed."""
    if not ev.succeeded:
        return ev.request.tables
    said = ev.response.get("unfinished")
    if isinstance(said, list) and all(isinstance(t, str) for t in said):
        return tuple(said)
    return unfinished(summary, ev.request.tables)
