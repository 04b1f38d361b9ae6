"""Starting a mirror run for a namespace (a schedule, a direct request, a debounce timer or a
follow-up): check the catalog, take the namespace's lease, ask the metadata what has work, start
one EMR Serverless run."""
import logging
from typing import Dict, List, Optional, Union

from botocore.exceptions import ClientError

from olake_cow.core.config import DestinationConfig
from olake_cow.core.maintenance import MaintenanceOptions
from olake_cow.core.planner import TableAsk

from . import jobs
from .context import Context
from .decide import (
    AllTables,
    Outcome,
    PendingTables,
    Skip,
    TableCheck,
    Tables,
    TableSelection,
    TriggerStatus,
    covered,
    decide,
    lease_until,
    pending_entry,
)
from .events import RunRequest
from .freshness import Freshness
from .glue import GlueTables
from .jobs import RunOptions
from .lifecycle import still_running
from .metrics import Point

log = logging.getLogger("olake_trigger")
QUEUED_REASON = "a mirror run holds this namespace; one follow-up run will start after it"


class Starts:
    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx

    def on_request(self, ev: RunRequest, namespace: str, tables: TableSelection, cfg: DestinationConfig) -> Outcome:
        ctx = self.ctx
        if ev.trigger == "debounce":
            due = ctx.store.get(namespace).last_commit + ctx.s.quiet_period_s
            if due > ctx.now():
                ctx.debouncer().schedule(namespace, due)
                return Outcome(TriggerStatus.DEBOUNCED, "a commit arrived during the quiet period",
                               namespace=namespace, due=due)
            return self.start(namespace, PendingTables(), ev.window, ev.options, cfg).about(namespace)
        return self.start(namespace, tables, f"{ev.trigger}:{ev.window}", ev.options, cfg).about(namespace)

    def start(self, namespace: str, requested: TableSelection, window: str, opts: RunOptions,
              cfg: DestinationConfig) -> Outcome:
        ctx, glue = self.ctx, GlueTables.of(cfg, self.ctx.c.glue, self.ctx.c.s3)
        refusal = glue.missing(namespace, requested.names if isinstance(requested, Tables) else ()) if glue else None
        if refusal:  # before the lease: a refused request writes nothing
            return ctx.refuse(namespace, refusal)
        if opts.dry_run:
            return self._dry_run(namespace, requested, window, opts, cfg, glue)
        token, now = jobs.client_token(namespace, window), ctx.now()
        until = lease_until(now, ctx.s.job_timeout_min, ctx.s.lease_margin_min)
        held = ctx.store.acquire(namespace, token, now, until)
        if held is None:
            st = ctx.store.get(namespace)
            if self.still_running(namespace, st.job_run_id):
                ctx.store.add_pending(namespace, pending_entry(requested))
                return Outcome(TriggerStatus.QUEUED, QUEUED_REASON, job_run_id=st.job_run_id)
            held = ctx.store.acquire(namespace, token, now, until)
            if held is None:
                return Outcome(TriggerStatus.QUEUED, "another invocation is starting a run for this namespace")
        pending = held.pending
        try:
            tables = covered(requested, pending)
            tables = glue.held(namespace, tables) if glue else tables
            decision = tables if isinstance(tables, Skip) else decide(
                tables, None if opts.force else self._checks(cfg, glue, namespace, tables, opts.maintenance),
                opts.force, opts.maintenance.requested)
            if isinstance(decision, Skip):
                ctx.store.abandon(namespace, token, ())
                ctx.emit(namespace, Point("Skipped", "Count", 1.0))
                log.info("namespace %s: %s; no run started", namespace, decision.reason)
                return Outcome(TriggerStatus.SKIPPED, decision.reason)
            run_id = ctx.runs.start(jobs.start_job_run_request(ctx.s, cfg, namespace, decision.tables, window, opts,
                                                               decision.maintenance))
        except Exception:
            ctx.store.abandon(namespace, token, pending)
            raise
        summary_uri = jobs.summary_location(ctx.s, namespace, token)
        ctx.store.started(namespace, token, run_id, summary_uri)
        ctx.emit(namespace, Point("JobsStarted", "Count", 1.0))
        log.info("namespace %s: started mirror run %s (%s) for %s", namespace, run_id, opts.trigger,
                 ", ".join(f"{t}: {why}" for t, why in decision.why.items()) or _names(decision.tables))
        return Outcome(TriggerStatus.STARTED, job_run_id=run_id, client_token=token, tables=_names(decision.tables),
                       summary=summary_uri)

    def _dry_run(self, namespace: str, requested: TableSelection, window: str, opts: RunOptions,
                 cfg: DestinationConfig, glue: Optional[GlueTables]) -> Outcome:
        """What a request would start, with nothing taken or started (pending commits stay pending)."""
        tables = covered(AllTables() if isinstance(requested, PendingTables) else requested, ())
        assert not isinstance(tables, Skip)
        checks = None if opts.force else self._checks(cfg, glue, namespace, tables, opts.maintenance)
        decision = decide(tables, checks, opts.force, opts.maintenance.requested)
        chosen = tables if isinstance(decision, Skip) else decision.tables
        request = jobs.start_job_run_request(self.ctx.s, cfg, namespace, chosen, window, opts,
                                             not isinstance(decision, Skip) and decision.maintenance)
        return Outcome(TriggerStatus.DRY_RUN, decision.reason if isinstance(decision, Skip) else None,
                       would_start=not isinstance(decision, Skip), request=request,
                       tables_with_work=None if checks is None else sorted(
                           t for t, c in checks.items() if c.merge or c.due))

    def _checks(self, cfg: DestinationConfig, glue: Optional[GlueTables], namespace: str,
                tables: Union[AllTables, Tables], maintenance: MaintenanceOptions) -> Optional[Dict[str, TableCheck]]:
        """The metadata check of each covered table, or None when the catalog cannot be read from here."""
        if glue is None:
            log.info("%s catalog %s is not read by the trigger (Glue only): the run decides, and commits nothing "
                     "when nothing is new", cfg.catalog_type, cfg.catalog_name)
            return None
        try:
            checks = Freshness(glue, self.ctx.s.cow_suffix, self.ctx.s.source_mode,
                               TableAsk(self.ctx.s.delete_mode)).check(
                namespace, tables.names if isinstance(tables, Tables) else None, maintenance, self.ctx.now() * 1000)
        except (ClientError, ValueError, KeyError) as exc:
            log.warning("metadata check for %s failed (%s: %s); starting the run anyway", namespace,
                        type(exc).__name__, exc)
            return None
        log.info("metadata check for %s: %s", namespace,
                 {t: c for t, c in checks.items() if c.merge or c.due} or "nothing new, nothing due")
        for t, c in checks.items():
            if c.refused:
                log.warning("%s.%s: no run is started for it: %s", namespace, t, c.refused)
        return checks

    def still_running(self, namespace: str, job_run_id: Optional[str]) -> bool:
        """True if `job_run_id` still runs (lifecycle.still_running)."""
        return still_running(self.ctx, namespace, job_run_id)


def _names(tables: Union[AllTables, Tables]) -> Union[str, List[str]]:
    return list(tables.names) if isinstance(tables, Tables) else "all"
