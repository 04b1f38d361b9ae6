"""An Iceberg metadata commit of OLake's (an S3 Object Created event): debounced into one run per
namespace once the sync has been quiet for the quiet period."""
import logging

from botocore.exceptions import ClientError

from olake_cow.core.config import DestinationConfig

from .context import Context
from .decide import Outcome, PendingTables, TriggerStatus
from .events import Commit
from .freshness import is_truncate_boundary
from .glue import read_json_s3
from .jobs import RunOptions
from .starts import QUEUED_REASON, Starts

log = logging.getLogger("olake_trigger")


class Commits:
    def __init__(self, ctx: Context, starts: Starts) -> None:
        self.ctx, self.starts = ctx, starts

    def on_commit(self, ev: Commit, cfg: DestinationConfig) -> Outcome:
        event_key = f"s3:{ev.bucket}/{ev.key}"
        if self.ctx.store.seen(event_key):
            log.info("duplicate commit event for s3://%s/%s", ev.bucket, ev.key)
            return Outcome(TriggerStatus.DUPLICATE, "this commit was already seen").about(ev.namespace, ev.table)
        out = self._handle(ev, cfg)
        self.ctx.store.mark_seen(event_key, self.ctx.now(), self.ctx.s.dedupe_ttl_s)
        return out.about(ev.namespace, ev.table)

    def _handle(self, ev: Commit, cfg: DestinationConfig) -> Outcome:
        ctx = self.ctx
        try:
            if is_truncate_boundary(read_json_s3(ctx.c.s3, f"s3://{ev.bucket}/{ev.key}")):
                return Outcome(TriggerStatus.IGNORED, "the job's own truncate (a change-set boundary)")
        except (ClientError, ValueError) as exc:
            log.warning("cannot read s3://%s/%s (%s); treating it as a source commit", ev.bucket, ev.key,
                        type(exc).__name__)
        now = ctx.now()
        st = ctx.store.add_pending(ev.namespace, [ev.table], now)
        if st.leased(now) and self.starts.still_running(ev.namespace, st.job_run_id):
            return Outcome(TriggerStatus.QUEUED, QUEUED_REASON, job_run_id=st.job_run_id)
        if ctx.s.quiet_period_s == 0:
            return self.starts.start(ev.namespace, PendingTables(), f"commit:{ev.bucket}/{ev.key}",
                                     RunOptions("commit"), cfg)
        due = st.last_commit + ctx.s.quiet_period_s
        ctx.debouncer().schedule(ev.namespace, due)
        return Outcome(TriggerStatus.DEBOUNCED, f"the run starts when no commit arrived for {ctx.s.quiet_period_s} s",
                       due=due)
