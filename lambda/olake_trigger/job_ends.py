"""A mirror run's end (EMR Serverless state change): release the namespace, publish the run's
metrics (its summary and billed cost), and start one follow-up run for commits that arrived
meanwhile."""
from typing import Any, Mapping

from . import jobs
from .context import Context
from .decide import Outcome, PendingTables, TriggerStatus
from .events import JobStateChange
from .jobs import RunOptions
from .lifecycle import StartsRuns, close_run


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
